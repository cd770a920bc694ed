namespace PoolBench.Article;

/// <summary>One cell of the article table, as written to JSON. <see cref="BytesPerRequest"/> is null when
/// BenchmarkDotNet's memory diagnoser gave no figure.</summary>
internal sealed record ArticleResult(
    int Requests,
    string Mode,
    double Seconds,
    double SecondsMin,
    double SecondsMax,
    double? BytesPerRequest,
    int Iterations)
{
    public string Scenario => "article";
}
