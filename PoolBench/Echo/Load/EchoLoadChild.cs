using System.Globalization;
using System.Net;

namespace PoolBench.Echo.Load;

/// <summary>
/// PoolBench as a child echo client (<c>PoolBench echo-client</c>, started by <see cref="EchoLoadProcess"/>): it
/// runs one <see cref="EchoLoad"/> on the commands its standard input brings, one per line, and answers on its
/// standard output. <c>start PROTOCOL HOST:PORT CONNECTIONS SIZE PIPELINE</c> connects and starts the warm-up,
/// answered by <c>started</c>; <c>measure</c> starts counting; <c>drain</c> stops counting and sending, and is
/// answered, once the echoes in flight are back, by the round's <see cref="EchoLoadResult"/> as one JSON line.
/// It exits when its standard input closes, so it never outlives the benchmark.
/// </summary>
internal static class EchoLoadChild
{
    /// <summary>The first argument that starts PoolBench as a child client.</summary>
    public const string Role = "echo-client";

    public const string Started = "started";

    /// <returns>0 at the end of the input, 2 for a command it does not know.</returns>
    public static async Task<int> RunAsync(TextReader input, TextWriter output)
    {
        await using var load = new EchoLoad();
        while (await input.ReadLineAsync().ConfigureAwait(false) is string line)
        {
            switch (line.Split(' '))
            {
                case ["start", string protocol, string server, string connections, string size, string pipeline]:
                    var cell = new EchoCell(protocol, Number(connections), Number(size), Number(pipeline));
                    await load.StartAsync(cell, cell.Connections, IPEndPoint.Parse(server)).ConfigureAwait(false);
                    await AnswerAsync(output, Started).ConfigureAwait(false);
                    break;
                case ["measure"]:
                    load.Measure();
                    break;
                case ["drain"]:
                    load.Drain();
                    EchoLoadResult result = await load.FinishAsync().ConfigureAwait(false);
                    await AnswerAsync(output, result.ToJson()).ConfigureAwait(false);
                    break;
                default:
                    await Console.Error.WriteLineAsync($"PoolBench {Role}: unknown command '{line}'").ConfigureAwait(false);
                    return 2;
            }
        }

        return 0;
    }

    private static int Number(string text) => int.Parse(text, NumberStyles.None, CultureInfo.InvariantCulture);

    private static async Task AnswerAsync(TextWriter output, string line)
    {
        await output.WriteLineAsync(line).ConfigureAwait(false);
        await output.FlushAsync().ConfigureAwait(false);
    }
}
