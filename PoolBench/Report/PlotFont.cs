using ScottPlot;
using SkiaSharp;

namespace PoolBench.Report;

/// <summary>
/// Picks the font the plots are labelled in. The drawing library is the build that depends on no
/// system library, so it cannot ask fontconfig for the system's fonts: a font file is looked up in
/// the usual Linux folders and registered by path.
/// </summary>
internal static class PlotFont
{
    private const string Family = "PoolBench Sans";

    private static readonly string[] s_folders = ["/usr/share/fonts", "/usr/local/share/fonts", "/usr/lib/x86_64-linux-gnu/fonts"];

    // Preferred in this order when several are installed; any other .ttf does too.
    private static readonly string[] s_preferred = ["DejaVuSans.ttf", "LiberationSans-Regular.ttf", "NotoSans-Regular.ttf", "FreeSans.ttf"];

    private static bool s_chosen;

    /// <summary>
    /// Labels the plots in a sans-serif font file from the usual folders when one is installed, else in
    /// the library's default font if it has glyphs, else in any font file found; throws
    /// <see cref="PlotFontException"/> when there is none.
    /// </summary>
    public static void Choose()
    {
        if (s_chosen)
        {
            return;
        }

        string[] files = FontFiles();
        string? file = s_preferred.Select(name => files.FirstOrDefault(f => Path.GetFileName(f) == name)).FirstOrDefault(f => f is not null);
        if (file is null && !HasGlyphs(Fonts.GetTypeface(Fonts.Default, bold: false, italic: false)))
        {
            file = files.FirstOrDefault() ?? throw new PlotFontException(
                $"the default font has no glyphs and no .ttf file was found under {string.Join(", ", s_folders)} (on Debian: apt-get install fonts-dejavu-core)");
        }

        if (file is not null)
        {
            Fonts.AddFontFile(Family, file, bold: false, italic: false);
            Fonts.AddFontFile(Family, BoldOf(file), bold: true, italic: false);
            Fonts.Default = Family;
        }

        s_chosen = true;
    }

    private static bool HasGlyphs(SKTypeface? typeface) => typeface is not null && typeface.GlyphCount > 0 && typeface.ContainsGlyphs("ns/pair");

    /// <summary>The bold face beside a regular font file (DejaVuSans-Bold.ttf, LiberationSans-Bold.ttf), or the file itself.</summary>
    private static string BoldOf(string file)
    {
        string name = Path.GetFileNameWithoutExtension(file);
        string bold = Path.Combine(Path.GetDirectoryName(file)!, (name.EndsWith("-Regular", StringComparison.Ordinal) ? name[..^"-Regular".Length] : name) + "-Bold.ttf");
        return File.Exists(bold) ? bold : file;
    }

    private static string[] FontFiles() =>
        s_folders
            .Where(Directory.Exists)
            .SelectMany(folder => Directory.EnumerateFiles(folder, "*.ttf", SearchOption.AllDirectories))
            .Order(StringComparer.Ordinal)
            .ToArray();

    /// <summary>No font was found to label the plots with.</summary>
    public sealed class PlotFontException(string message) : Exception(message);
}
