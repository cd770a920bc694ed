using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace PoolBench.Resp;

/// <summary>Runs Debian's <c>redis-benchmark --csv</c> against a server and reads its figures, one line per test.</summary>
internal static class RedisBenchmark
{
    /// <summary>One run of <paramref name="tests"/> (redis-benchmark's <c>-t</c>, such as <c>get,set</c>).</summary>
    /// <param name="program">redis-benchmark's path; it runs where this process runs (pin that with taskset).</param>
    /// <param name="clients">Its <c>-c</c>: connections, each with one request in flight (times the pipeline).</param>
    /// <param name="requests">Its <c>-n</c>: requests per test, shared by the clients.</param>
    /// <param name="pipeline">Its <c>-P</c>.</param>
    /// <param name="tls">Whether it speaks TLS (<c>--tls</c>, not checking the server's certificate).</param>
    public static async Task<Run> RunAsync(string program, IPEndPoint endPoint, int clients, int requests, int pipeline, string tests, bool tls)
    {
        var start = new ProcessStartInfo(program)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
        };
        foreach (string argument in (string[])["-h", endPoint.Address.ToString(), "-p", Text(endPoint.Port), "-c", Text(clients), "-n", Text(requests),
                     "-P", Text(pipeline), "-t", tests, "--csv"])
        {
            start.ArgumentList.Add(argument);
        }

        if (tls)
        {
            // The run's certificate is self-signed: encryption is measured, not the chain.
            start.ArgumentList.Add("--tls");
            start.ArgumentList.Add("--insecure");
        }

        using Process process = Process.Start(start) ?? throw new InvalidOperationException("redis-benchmark did not start");
        process.StandardInput.Close();
        Task<string> output = process.StandardOutput.ReadToEndAsync();
        string errors = await process.StandardError.ReadToEndAsync().ConfigureAwait(false);
        await process.WaitForExitAsync().ConfigureAwait(false);
        string text = await output.ConfigureAwait(false);

        List<RequestFigures> lines = [.. text.Split('\n').Select(Parse).OfType<RequestFigures>()];
        long errorLines = (text + errors).Split('\n').LongCount(line => line.Contains("rror", StringComparison.Ordinal));
        return new Run(process.ExitCode, lines, errorLines, $"{errors.Trim()} {text.Trim()}".Trim());
    }

    private static string Text(int value) => value.ToString(CultureInfo.InvariantCulture);

    /// <summary>One CSV line of redis-benchmark 7: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
    /// "p95_latency_ms","p99_latency_ms","max_latency_ms"; null for any other line (the header).</summary>
    private static RequestFigures? Parse(string text)
    {
        string[] fields = text.Trim().Split(',').Select(field => field.Trim('"')).ToArray();
        return fields.Length >= 7 && double.TryParse(fields[1], NumberStyles.Float, CultureInfo.InvariantCulture, out double rps)
            ? new RequestFigures(fields[0], rps, double.Parse(fields[4], CultureInfo.InvariantCulture), double.Parse(fields[6], CultureInfo.InvariantCulture))
            : null;
    }

    /// <summary>
    /// One redis-benchmark run: its exit code, a line of figures per test, how many lines of its output speak of an error
    /// (it stops at the first error reply), and its whole output for a failure's message.
    /// </summary>
    public sealed record Run(int ExitCode, IReadOnlyList<RequestFigures> Lines, long Errors, string Output)
    {
        /// <summary>Whether it exited with an error or printed no figures.</summary>
        public bool Failed => ExitCode != 0 || Lines.Count == 0;
    }
}
