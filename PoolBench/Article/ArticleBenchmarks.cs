using System.Net.Sockets;
using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Configs;
using PoolLib;

namespace PoolBench.Article;

/// <summary>
/// The article's table: N object requests served by creating a <see cref="SocketAsyncEventArgs"/>
/// with a new 1024-byte buffer each time, or by taking one from our pool, on one thread or split
/// over 25 tasks (pool capacity 10, so the tasks contend for it). One invocation serves all N
/// requests; the pool is created empty in each invocation, so its first requests pay for creating
/// objects. Each category's baseline is the same requests without the pool.
/// </summary>
[MemoryDiagnoser]
[ThreadingDiagnoser]
[CategoriesColumn]
[GroupBenchmarksBy(BenchmarkLogicalGroupRule.ByCategory, BenchmarkLogicalGroupRule.ByParams)]
public class ArticleBenchmarks
{
    public const string OneThreadNoPoolMode = "one-thread-no-pool";
    public const string OneThreadPoolMode = "one-thread-pool";
    public const string TasksNoPoolMode = "tasks-no-pool";
    public const string TasksPoolMode = "tasks-pool";

    private const string OneThread = "one thread";
    private const string TwentyFiveTasks = "25 tasks";
    private const int BufferSize = 1024;
    private const int Tasks = 25;
    private const int PoolCapacity = 10;

    [Params(1_000, 10_000, 25_000, 50_000, 1_000_000)]
    public int Requests { get; set; }

    [Benchmark(Description = OneThreadNoPoolMode, Baseline = true)]
    [BenchmarkCategory(OneThread)]
    public void OneThreadNoPool() => RequestsWithoutPool(Requests);

    [Benchmark(Description = OneThreadPoolMode)]
    [BenchmarkCategory(OneThread)]
    public void OneThreadPool()
    {
        using var pool = new ArgsPool(BufferSize, PoolCapacity);
        RequestsFromPool(pool, Requests);
    }

    [Benchmark(Description = TasksNoPoolMode, Baseline = true)]
    [BenchmarkCategory(TwentyFiveTasks)]
    public void TasksNoPool() => OnTasks(Requests, RequestsWithoutPool);

    [Benchmark(Description = TasksPoolMode)]
    [BenchmarkCategory(TwentyFiveTasks)]
    public void TasksPool()
    {
        using var pool = new ArgsPool(BufferSize, PoolCapacity);
        OnTasks(Requests, count => RequestsFromPool(pool, count));
    }

    /// <summary>Splits the requests over 25 tasks, as the article does; the time includes starting them.</summary>
    private static void OnTasks(int requests, Action<int> serve)
    {
        var tasks = new Task[Tasks];
        for (int t = 0; t < Tasks; t++)
        {
            int count = requests / Tasks + (t < requests % Tasks ? 1 : 0);
            tasks[t] = Task.Run(() => serve(count));
        }

        Task.WaitAll(tasks);
    }

    private static void RequestsWithoutPool(int count)
    {
        for (int i = 0; i < count; i++)
        {
            var args = new SocketAsyncEventArgs();
            args.SetBuffer(new byte[BufferSize], 0, BufferSize);
            Use(args, i);
            args.Dispose();
        }
    }

    private static void RequestsFromPool(ArgsPool pool, int count)
    {
        for (int i = 0; i < count; i++)
        {
            using var slot = pool.TakeSlot();
            Use(slot.Object, i);
        }
    }

    /// <summary>The same token work on every object, so neither column measures an empty loop.</summary>
    private static void Use(SocketAsyncEventArgs args, int request) => args.Buffer![request % BufferSize] = (byte)request;

    /// <summary>The article's SocketClientPool: each args owns one buffer and carries its slot in UserToken.</summary>
    private sealed class ArgsPool(int bufferSize, int maxCapacity) : Pool<SocketAsyncEventArgs>(maxCapacity)
    {
        protected override SocketAsyncEventArgs ObjectConstructor()
        {
            var args = new SocketAsyncEventArgs();
            args.SetBuffer(new byte[bufferSize], 0, bufferSize);
            return args;
        }

        protected override void HoldSlotInObject(SocketAsyncEventArgs args, PoolSlot<SocketAsyncEventArgs> slot) => args.UserToken = slot;
    }
}
