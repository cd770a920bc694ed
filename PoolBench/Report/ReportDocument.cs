namespace PoolBench.Report;

/// <summary>The JSON document: the scenario that ran, the machine, and one object per measured cell.</summary>
internal sealed record ReportDocument(string Scenario, Machine Machine, IReadOnlyList<object> Results, IReadOnlyList<string> Failures);
