using System.Runtime.InteropServices;

namespace PoolLib;

/// <summary>
/// One object reference alone on its cache line, so that cores writing neighbouring cells of an
/// array of these never invalidate each other's lines (false sharing).
/// </summary>
/// <remarks>
/// 128 bytes covers the adjacent-line prefetcher of x64 parts as well as 128-byte lines on arm64.
/// The reference sits in the middle so that element 0 does not share a line with the array header.
/// Generic types cannot have explicit layout, hence <see cref="object"/> rather than a type parameter.
/// </remarks>
[StructLayout(LayoutKind.Explicit, Size = 128)]
internal struct PaddedReference
{
    [FieldOffset(64)]
    public object? Value;
}
