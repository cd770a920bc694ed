using SocketServers;

namespace Samples;

/// <summary>Answers each datagram with what an asynchronous lookup writes, without holding the receiving thread.</summary>
public sealed class LookupDatagramHandler(Func<ReadOnlyMemory<byte>, Memory<byte>, Task<int>> lookUpAsync) : UdpDatagramHandler
{
    public override int OnDatagram(UdpDatagram datagram)
    {
        _ = AnswerAsync(datagram.DeferReply());
        return NoReply; // ignored: the reply is deferred
    }

    private async Task AnswerAsync(UdpDeferredReply reply)
    {
        using (reply) // no reply if the lookup throws
        {
            reply.Send(await lookUpAsync(reply.Data, reply.Buffer));
        }
    }
}
