using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>The fixed entries of a <see cref="ThreadSlotCache"/>, inline in it: no separate array to reach.</summary>
[InlineArray(Length)]
internal struct ThreadSlotCacheEntries
{
    /// <summary>How many entries there are.</summary>
    public const int Length = 8;

    private object? _first;
}
