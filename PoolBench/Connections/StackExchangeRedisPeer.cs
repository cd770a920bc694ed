using System.Diagnostics;
using System.Net;
using PoolBench.Echo.Load;
using StackExchange.Redis;

namespace PoolBench.Connections;

/// <summary>
/// StackExchange.Redis, the client .NET users pick: one <see cref="ConnectionMultiplexer"/> that every worker shares,
/// each worker awaiting <c>StringSetAsync</c> or <c>StringGetAsync</c> with the key and value redis-benchmark uses. It
/// sends all workers' commands over one connection, so it is context beside the pools, not a pool.
/// </summary>
internal sealed class StackExchangeRedisPeer : IConnectionsPeer
{
    public const string PeerName = "StackExchange.Redis";

    private static readonly RedisKey s_key = RespCommand.Key;
    private static readonly RedisValue s_value = RespCommand.Value;

    private readonly ConnectionMultiplexer _redis;
    private readonly IDatabase _database;
    private readonly int _workers;

    private StackExchangeRedisPeer(ConnectionMultiplexer redis, int workers)
    {
        _redis = redis;
        _database = redis.GetDatabase();
        _workers = workers;
    }

    public string Name => PeerName;

    public static async Task<StackExchangeRedisPeer> ConnectAsync(IPEndPoint server, int workers)
    {
        var configuration = new ConfigurationOptions { EndPoints = { server }, AbortOnConnectFail = true };
        return new StackExchangeRedisPeer(await ConnectionMultiplexer.ConnectAsync(configuration).ConfigureAwait(false), workers);
    }

    public async Task<IReadOnlyList<TestRound>> RunAsync(int requests)
    {
        var rounds = new List<TestRound>(RespCommand.Both.Count);
        foreach (RespCommand command in RespCommand.Both)
        {
            bool set = command == RespCommand.Set;
            rounds.Add(await RequestRun.MeasureAsync(command.Test, _workers, requests, (run, latency) => WorkerAsync(set, run, latency)).ConfigureAwait(false));
        }

        return rounds;
    }

    public async ValueTask DisposeAsync() => await _redis.DisposeAsync().ConfigureAwait(false);

    private async Task WorkerAsync(bool set, RequestRun run, LatencyHistogram latency)
    {
        await run.Started.ConfigureAwait(false);
        while (run.TryClaim())
        {
            long started = Stopwatch.GetTimestamp();
            try
            {
                bool answered = set
                    ? await _database.StringSetAsync(s_key, s_value).ConfigureAwait(false)
                    : await _database.StringGetAsync(s_key).ConfigureAwait(false) == s_value;
                if (!answered)
                {
                    throw new InvalidDataException($"{(set ? "SET" : "GET")} got an unexpected reply");
                }
            }
            catch (Exception e) when (e is RedisException or TimeoutException or InvalidDataException)
            {
                run.Failed(e);
            }

            latency.Record((long)Stopwatch.GetElapsedTime(started).TotalNanoseconds);
        }
    }
}
