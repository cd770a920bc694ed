using System.Net;
using System.Net.Sockets;

namespace PoolBench.Echo.Load;

/// <summary>
/// A share of an echo cell's clients in this process: TCP connections or UDP senders that run as
/// asynchronous chains on the thread pool, sharing one <see cref="EchoRun"/> phase. It counts this
/// process's allocations over its measured window as well as what the clients counted themselves.
/// </summary>
internal sealed class EchoLoad : IEchoLoad
{
    private static readonly TimeSpan s_drainTimeout = TimeSpan.FromSeconds(10);

    private EchoRun _run = new();
    private EchoClient[] _clients = [];
    private Task[] _exchanges = [];
    private long _errors;
    private string? _firstError;
    private long _allocated;

    public bool InProcess => true;

    public async Task StartAsync(EchoCell cell, int connections, EndPoint server)
    {
        _run = new EchoRun();
        _errors = 0;
        _firstError = null;
        _allocated = 0;
        var pattern = new MessagePattern(cell.Size);
        _clients = new EchoClient[connections];
        for (int i = 0; i < _clients.Length; i++)
        {
            _clients[i] = cell.Protocol == "tcp"
                ? new TcpEchoClient(_run, pattern, cell.Pipeline, server.AddressFamily)
                : new UdpEchoClient(_run, pattern, cell.Pipeline, server.AddressFamily);
        }

        try
        {
            await Task.WhenAll(_clients.Select(c => c.ConnectAsync(server))).ConfigureAwait(false);
            _exchanges = _clients.Select(c => c.RunAsync()).ToArray();
        }
        catch (SocketException e)
        {
            Fail($"{cell.Protocol} connect: {e.Message}");
            _exchanges = [];
        }
    }

    public void Measure()
    {
        _allocated = GC.GetTotalAllocatedBytes(true);
        _run.Measure();
    }

    public void Drain()
    {
        _allocated = GC.GetTotalAllocatedBytes(true) - _allocated;
        _run.Drain();
    }

    public async Task<EchoLoadResult> FinishAsync()
    {
        try
        {
            Task all = Task.WhenAll(_exchanges);
            if (await Task.WhenAny(all, Task.Delay(s_drainTimeout)).ConfigureAwait(false) != all)
            {
                Fail($"the server did not echo every message in flight within {s_drainTimeout.TotalSeconds} s");
            }
        }
        finally
        {
            foreach (EchoClient client in _clients)
            {
                client.Dispose();
            }
        }

        var latency = new LatencyHistogram();
        long messages = 0, lost = 0, clientAllocated = 0, errors = _errors;
        string? firstError = _firstError;
        foreach (EchoClient client in _clients)
        {
            latency.Add(client.Latency);
            messages += client.Messages;
            lost += client.Lost;
            clientAllocated += client.AllocatedBytes;
            errors += client.Errors;
            firstError ??= client.FirstError;
        }

        _clients = [];
        _exchanges = [];
        return new EchoLoadResult
        {
            Messages = messages,
            Errors = errors,
            Lost = lost,
            ClientAllocatedBytes = clientAllocated,
            ProcessAllocatedBytes = _allocated,
            FirstError = firstError,
            Latency = latency,
        };
    }

    public ValueTask DisposeAsync()
    {
        foreach (EchoClient client in _clients)
        {
            client.Dispose();
        }

        return ValueTask.CompletedTask;
    }

    private void Fail(string what)
    {
        _errors++;
        _firstError ??= what;
    }
}
