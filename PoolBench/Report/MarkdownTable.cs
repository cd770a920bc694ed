using System.Text;

namespace PoolBench.Report;

/// <summary>A markdown table built row by row; columns are padded so the raw text reads as a table too.</summary>
internal sealed class MarkdownTable(params string[] headers)
{
    private readonly List<string[]> _rows = [];

    public MarkdownTable Row(params string[] cells)
    {
        if (cells.Length != headers.Length)
        {
            throw new ArgumentException($"a row needs {headers.Length} cells, not {cells.Length}", nameof(cells));
        }

        _rows.Add(cells);
        return this;
    }

    /// <summary>Writes the table to stdout under a second-level heading.</summary>
    public void Print(string title)
    {
        Console.WriteLine($"## {title}");
        Console.WriteLine();
        Console.WriteLine(this);
    }

    public override string ToString()
    {
        var widths = new int[headers.Length];
        foreach (string[] row in _rows.Prepend(headers))
        {
            for (int i = 0; i < row.Length; i++)
            {
                widths[i] = Math.Max(Math.Max(widths[i], row[i].Length), 3);
            }
        }

        var text = new StringBuilder();
        Append(text, headers, widths);
        Append(text, widths.Select(w => new string('-', w)).ToArray(), widths);
        foreach (string[] row in _rows)
        {
            Append(text, row, widths);
        }

        return text.ToString();
    }

    private static void Append(StringBuilder text, string[] cells, int[] widths)
    {
        text.Append('|');
        for (int i = 0; i < cells.Length; i++)
        {
            text.Append(' ').Append(cells[i].PadRight(widths[i])).Append(" |");
        }

        text.Append('\n');
    }
}
