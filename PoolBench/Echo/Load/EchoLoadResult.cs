using System.Text.Json;
using System.Text.Json.Serialization;

namespace PoolBench.Echo.Load;

/// <summary>
/// What one client of the echo load saw in one round, in this process or sent over from a child process as
/// one JSON line.
/// </summary>
internal sealed class EchoLoadResult
{
    private static readonly JsonSerializerOptions s_json = new() { PropertyNamingPolicy = JsonNamingPolicy.SnakeCaseLower };

    /// <summary>Echoes received and checked while measuring.</summary>
    public long Messages { get; init; }

    /// <summary>Mismatched echoes, broken connections, failed connects and a drain that did not finish.</summary>
    public long Errors { get; init; }

    /// <summary>UDP datagrams whose echo did not arrive in time.</summary>
    public long Lost { get; init; }

    /// <summary>What the clients allocated on their own threads while measuring.</summary>
    public long ClientAllocatedBytes { get; init; }

    /// <summary>What the clients' whole process allocated while measuring.</summary>
    public long ProcessAllocatedBytes { get; init; }

    /// <summary>What went wrong first, for the log.</summary>
    public string? FirstError { get; init; }

    [JsonIgnore]
    public LatencyHistogram Latency { get; init; } = new();

    /// <summary>The latency histogram's non-empty buckets, as the JSON line carries them.</summary>
    public Dictionary<int, long> LatencyBuckets
    {
        get => Latency.NonEmptyBuckets();
        init => Latency = LatencyHistogram.FromBuckets(value);
    }

    /// <summary>The result as one line of JSON, for the parent process.</summary>
    public string ToJson() => JsonSerializer.Serialize(this, s_json);

    /// <summary>Reads a line that <see cref="ToJson"/> wrote.</summary>
    /// <exception cref="JsonException">The line is not such a result.</exception>
    public static EchoLoadResult FromJson(string line) =>
        JsonSerializer.Deserialize<EchoLoadResult>(line, s_json) ?? throw new JsonException("an echo client answered null");
}
