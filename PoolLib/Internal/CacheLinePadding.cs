using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// 128 bytes of nothing, the last field of an object that one thread writes often: the runtime lays
/// a class's references and numbers out before its structs, so the padding keeps the next object in
/// memory off the cache lines (and the pair of lines x64 prefetches together) of those fields.
/// </summary>
[InlineArray(16)]
internal struct CacheLinePadding
{
    private long _element;
}
