using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>Where the pool was called from: a stack trace whose first frame is the first one outside this library.</summary>
internal static class CallerStackTrace
{
    /// <summary>Captures the calling thread's stack, less the library's own frames on top of it (inlined ones never appear).</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static StackTrace Capture()
    {
        var trace = new StackTrace(skipFrames: 0, fNeedFileInfo: false);
        StackFrame[] frames = trace.GetFrames();

        // Frame 0 is this method, so its assembly is the library's: no name is written down, and no reflection used.
        string? library = frames.Length > 0 ? DiagnosticMethodInfo.Create(frames[0])?.DeclaringAssemblyName : null;
        int first = 0;
        while (library is not null && first < frames.Length - 1 && DiagnosticMethodInfo.Create(frames[first])?.DeclaringAssemblyName == library)
        {
            first++;
        }

        return new StackTrace(frames[first..]);
    }
}
