using System.Globalization;

namespace PoolBench;

/// <summary>The parsed command line: which scenario to run and how big to make it.</summary>
internal sealed class BenchOptions
{
    public const string Usage = """
        usage: PoolBench <article|pools|size|echo|all|soak|resp|connections> [options]
          --quick                 shrink every scenario to seconds (CI smoke run)
          --json PATH             also write the results as one JSON document
          --plots DIR             where to write the PNG plots (default: plots beside the --json file, or in
                                  the temp folder's PoolBench folder)
          --artifacts DIR         where BenchmarkDotNet writes its logs and reports (default:
                                  BenchmarkDotNet.Artifacts beside the --json file, or in the temp folder's
                                  PoolBench folder)
          --filter GLOB           article and pools: run only the benchmark cases whose full name matches
                                  (BenchmarkDotNet's glob filter, e.g. '*PoolsBenchmarks.Ours(Pattern: Short*');
                                  may be given more than once
          pools:
          --workers N[,N..]       worker threads of each pools cell, 1 to 256 (default: 1,2,4,25)
          echo only:
          --target [NAME=]HOST:PORT[,..]
                                  load echo servers that are already running (TCP and UDP on that port),
                                  named NAME in the tables if given
          --server S[,S..]        servers to start: ours-process (our host as a child process), ours (in
                                  this process, sharing its GC and thread pool with the client), peer (the
                                  Node.js server), c (the C epoll server, built with gcc), kestrel (Kestrel
                                  with an echo ConnectionHandler, TCP only), all = ours-process,peer,kestrel
                                  (default: all)
          --clients K             client processes that share each cell's connections; 1 runs the client in
                                  this process (default: 1)
          --client dotnet|c       the load client: PoolBench's own, or the C epoll client (peers/echo-client.c,
                                  built with gcc; TCP only, --clients K of its processes) (default: dotnet)
          --server-cpus LIST      run the child servers pinned to these CPUs (taskset -c LIST, e.g. 0 or 0-3);
                                  pin the clients by starting PoolBench itself under taskset (default: unpinned)
          --c-threads N           threads of the C server (default: the CPUs it may run on)
          --server-env NAME=VALUE[,..]
                                  run ours-process with these variables in its environment, such as the GC's
                                  DOTNET_gcServer=1; given more than once, one ours-process per setting, side
                                  by side; - for none (default: -)
          --protocol tcp|udp|both (default: both)
          --connections N[,N..]   TCP connections or UDP senders (default: TCP 100, UDP 8,100)
          --size BYTES[,..]       message size (default: 32; UDP needs at least 8)
          --pipeline K[,K..]      messages in flight per connection, 1 is ping-pong (default: TCP 1,100, UDP 1)
          --seconds S             measured seconds per server and cell, split into rounds (default: 5, quick: 1)
          --rounds N              rounds per cell, each measuring every server in turn (default: 5, quick: 1)
          --idle N                TCP connections held idle by a Node.js child process, then echoed once
                                  each; 0 skips (default: 1000, quick: 50)
          soak (not part of all): each server in turn under mixed clients that echo, reset, half-close,
          idle and send UDP bursts, with the server's memory followed every second; it takes --server
          (default: ours-process), --target, --server-env, --server-cpus, --c-threads and
          --seconds S             how long each server is soaked (default: 60, quick: 3)
          --connections N         mixed clients (default: 256, quick: 16)
          resp (not part of all): redis-benchmark -t ping,set,get,incr against our RESP sample and Debian's
          redis-server (skipped where it is not installed), in turn, with the same settings; it takes
          --server-cpus (pin PoolBench itself for redis-benchmark) and
          --connections N         redis-benchmark's clients, -c (default: 50)
          --pipeline K[,K..]      redis-benchmark's -P (default: 1,16, quick: 1)
          --rounds N              runs per cell, each running every server in turn (default: 3, quick: 1)
          --tls                   every server and redis-benchmark speak TLS, with one self-signed certificate
                                  made for the run (redis-server with --tls-port)
          connections (not part of all): SET and GET against Debian's redis-server from TcpClientPool, a
          hand-written pool (SemaphoreSlim and ConcurrentBag<Socket>), StackExchange.Redis and redis-benchmark
          (skipped where they are not installed, but with CI=true), as many connections allowed as workers;
          then a connect storm of 1,000 takers on ours and the hand-written pool; it takes --server-cpus (pin
          PoolBench itself for the clients) and
          --workers N[,N..]       concurrent workers, redis-benchmark's -c (default: 1,16,64,256)
          --rounds N              rounds per worker count, each running every peer in turn (default: 3, quick: 1)
        """;

    /// <summary>The most client processes <c>--clients</c> starts.</summary>
    public const int MaxClients = 64;

    /// <summary>The most threads <c>--c-threads</c> gives the C server.</summary>
    public const int MaxCThreads = 256;

    private static readonly string[] s_scenarios = ["article", "pools", "size", "echo", "all", "soak", "resp", "connections"];

    public required string Scenario { get; init; }
    public bool Quick { get; init; }
    public bool Tls { get; init; }
    public string? JsonPath { get; init; }
    public string? PlotsFolder { get; init; }
    public string? ArtifactsFolder { get; init; }
    public IReadOnlyList<string> Filters { get; init; } = [];
    public IReadOnlyList<int>? Workers { get; init; }
    public string? Target { get; init; }
    public IReadOnlyList<string> Servers { get; init; } = [];
    public int? Clients { get; init; }
    public string Client { get; init; } = "dotnet";
    public string? ServerCpus { get; init; }
    public int? CThreads { get; init; }
    public IReadOnlyList<IReadOnlyDictionary<string, string>> ServerEnvironments { get; init; } = [new Dictionary<string, string>()];
    public IReadOnlyList<string> Protocols { get; init; } = ["tcp", "udp"];
    public IReadOnlyList<int>? Connections { get; init; }
    public IReadOnlyList<int> Sizes { get; init; } = [32];
    public IReadOnlyList<int>? Pipelines { get; init; }
    public double? Seconds { get; init; }
    public int? Rounds { get; init; }
    public int? Idle { get; init; }

    /// <summary>Appended to every table title of a quick run, so its numbers are never taken for results.</summary>
    public string QuickLabel => Quick ? " — QUICK RUN" : "";

    /// <summary>Whether the run includes <paramref name="scenario"/>; <c>all</c> is every scenario but the soak and those against redis-server.</summary>
    public bool Runs(string scenario) => Scenario == scenario || (Scenario == "all" && scenario is not ("soak" or "resp" or "connections"));

    /// <summary>Where the PNG plots go: <c>--plots</c>, or beside the JSON document, or in the temp folder.</summary>
    public string PlotsPath => PlotsFolder ?? Path.Combine(OutputFolder, "plots");

    /// <summary>Where BenchmarkDotNet's artifacts go: <c>--artifacts</c>, or beside the JSON document, or in the temp folder.</summary>
    public string ArtifactsPath => ArtifactsFolder ?? Path.Combine(OutputFolder, "BenchmarkDotNet.Artifacts");

    private string OutputFolder =>
        JsonPath is not null
            ? Path.GetDirectoryName(Path.GetFullPath(JsonPath))!
            : Path.Combine(Path.GetTempPath(), "PoolBench");

    /// <summary>Parses the arguments; throws <see cref="ArgumentException"/> with a one-line reason.</summary>
    public static BenchOptions Parse(IReadOnlyList<string> args)
    {
        if (args.Count == 0 || !s_scenarios.Contains(args[0]))
        {
            throw new ArgumentException(args.Count == 0 ? "no scenario given" : $"unknown scenario '{args[0]}'");
        }

        var parsed = new Parsed();
        for (int i = 1; i < args.Count; i++)
        {
            string name = args[i];
            if (name == "--quick")
            {
                parsed.Quick = true;
                continue;
            }

            if (name == "--tls")
            {
                parsed.Tls = true;
                continue;
            }

            if (i + 1 >= args.Count)
            {
                throw new ArgumentException($"{name} needs a value");
            }

            parsed.Set(name, args[++i]);
        }

        return parsed.ToOptions(args[0]);
    }

    private static string OneOf(string name, string value, params string[] allowed) =>
        allowed.Contains(value) ? value : throw new ArgumentException($"{name} must be one of {string.Join('|', allowed)}, not '{value}'");

    private static string[] ServerList(string name, string value) =>
        value.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)
            .SelectMany(server => OneOf(name, server, "ours", "ours-process", "peer", "c", "kestrel", "all") == "all" ? ["ours-process", "peer", "kestrel"] : new[] { server })
            .Distinct()
            .ToArray();

    private static int[] PositiveList(string name, string value)
    {
        int[] numbers = value.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries).Select(part => Count(name, part)).ToArray();
        return numbers.Length > 0 && numbers.All(n => n > 0)
            ? numbers
            : throw new ArgumentException($"{name} takes positive whole numbers separated by commas, not '{value}'");
    }

    private static int[] WorkerList(string name, string value)
    {
        int[] counts = PositiveList(name, value);
        return counts.All(count => count <= 256)
            ? [.. counts.Distinct().Order()]
            : throw new ArgumentException($"{name} takes worker counts from 1 to 256, not '{value}'");
    }

    private static int AtMost(string name, string value, int max) =>
        Count(name, value) is > 0 and int count && count <= max
            ? count
            : throw new ArgumentException($"{name} takes a whole number from 1 to {max}, not '{value}'");

    private static Dictionary<string, string> Variables(string name, string value)
    {
        var variables = new Dictionary<string, string>(StringComparer.Ordinal);
        if (value == "-")
        {
            return variables;
        }

        foreach (string setting in value.Split(',', StringSplitOptions.TrimEntries))
        {
            int equals = setting.IndexOf('=', StringComparison.Ordinal);
            if (equals <= 0 || !variables.TryAdd(setting[..equals], setting[(equals + 1)..]))
            {
                throw new ArgumentException($"{name} takes NAME=VALUE settings separated by commas, each name once, or -, not '{value}'");
            }
        }

        return variables;
    }

    // taskset's list: CPU numbers and ranges, separated by commas.
    private static string CpuList(string name, string value) =>
        value.Split(',').All(part => part.Split('-') is [string one] ? IsCpu(one) : part.Split('-') is [string low, string high] && IsCpu(low) && IsCpu(high))
            ? value
            : throw new ArgumentException($"{name} takes CPU numbers and ranges separated by commas (0,2-3), not '{value}'");

    private static bool IsCpu(string text) => text.Length > 0 && int.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out _);

    private static int Positive(string name, string value) =>
        Count(name, value) is > 0 and int count ? count : throw new ArgumentException($"{name} takes a positive whole number, not '{value}'");

    private static int Count(string name, string value) =>
        int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out int count)
            ? count
            : throw new ArgumentException($"{name} takes whole numbers, not '{value}'");

    private static double PositiveSeconds(string name, string value) =>
        double.TryParse(value, NumberStyles.Float, CultureInfo.InvariantCulture, out double seconds) && seconds > 0 && seconds <= 3600
            ? seconds
            : throw new ArgumentException($"{name} takes a number of seconds between 0 and 3600, not '{value}'");

    /// <summary>The options as the command line gives them, one by one; what it leaves out is null until <see cref="ToOptions"/>.</summary>
    private sealed class Parsed
    {
        private readonly List<string> _filters = [];
        private readonly List<IReadOnlyDictionary<string, string>> _serverEnvironments = [];
        private string? _json, _plots, _artifacts, _target, _protocol, _serverCpus, _client;
        private IReadOnlyList<string>? _servers;
        private IReadOnlyList<int>? _workers, _connections, _sizes, _pipelines;
        private double? _seconds;
        private int? _rounds, _idle, _clients, _cThreads;

        public bool Quick { get; set; }

        public bool Tls { get; set; }

        public void Set(string name, string value)
        {
            switch (name)
            {
                case "--json": _json = value; break;
                case "--plots": _plots = value; break;
                case "--artifacts": _artifacts = value; break;
                case "--filter": _filters.Add(value); break;
                case "--workers": _workers = WorkerList(name, value); break;
                case "--target": _target = value; break;
                case "--server": _servers = ServerList(name, value); break;
                case "--clients": _clients = AtMost(name, value, MaxClients); break;
                case "--client": _client = OneOf(name, value, "dotnet", "c"); break;
                case "--server-cpus": _serverCpus = CpuList(name, value); break;
                case "--c-threads": _cThreads = AtMost(name, value, MaxCThreads); break;
                case "--server-env": _serverEnvironments.Add(Variables(name, value)); break;
                case "--protocol": _protocol = OneOf(name, value, "tcp", "udp", "both"); break;
                case "--connections": _connections = PositiveList(name, value); break;
                case "--size": _sizes = PositiveList(name, value); break;
                case "--pipeline": _pipelines = PositiveList(name, value); break;
                case "--seconds": _seconds = PositiveSeconds(name, value); break;
                case "--rounds": _rounds = Positive(name, value); break;
                case "--idle": _idle = Count(name, value); break;
                default: throw new ArgumentException($"unknown option '{name}'");
            }
        }

        public BenchOptions ToOptions(string scenario)
        {
            if (_client == "c" && _protocol != "tcp")
            {
                throw new ArgumentException("--client c loads TCP only: add --protocol tcp");
            }

            return Build(scenario);
        }

        private BenchOptions Build(string scenario) => new()
        {
            Scenario = scenario,
            Quick = Quick,
            Tls = Tls,
            // Full paths: the benchmark run may change the current directory.
            JsonPath = _json is null ? null : Path.GetFullPath(_json),
            PlotsFolder = _plots is null ? null : Path.GetFullPath(_plots),
            ArtifactsFolder = _artifacts is null ? null : Path.GetFullPath(_artifacts),
            Filters = _filters,
            Workers = _workers,
            Target = _target,
            Servers = _servers ?? (_target is not null ? [] : scenario == "soak" ? ["ours-process"] : ["ours-process", "peer"]),
            Clients = _clients,
            Client = _client ?? "dotnet",
            ServerCpus = _serverCpus,
            CThreads = _cThreads,
            ServerEnvironments = _serverEnvironments.Count > 0 ? _serverEnvironments : [new Dictionary<string, string>()],
            Protocols = _protocol is null or "both" ? ["tcp", "udp"] : [_protocol],
            Connections = _connections,
            Sizes = _sizes ?? [32],
            Pipelines = _pipelines,
            Seconds = _seconds,
            Rounds = _rounds,
            Idle = _idle,
        };
    }
}
