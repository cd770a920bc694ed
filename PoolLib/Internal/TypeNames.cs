namespace PoolLib.Internal;

/// <summary>Type names as C# writes them, for the names pools take by default.</summary>
internal static class TypeNames
{
    /// <summary>Gets a type's name as C# writes it: <c>Pool&lt;StringBuilder&gt;</c> rather than <c>Pool`1</c>.</summary>
    public static string Display(Type type)
    {
        if (!type.IsGenericType)
        {
            return type.Name;
        }

        string name = type.Name;
        int tick = name.IndexOf('`', StringComparison.Ordinal);
        return $"{(tick < 0 ? name : name[..tick])}<{string.Join(", ", type.GetGenericArguments().Select(Display))}>";
    }
}
