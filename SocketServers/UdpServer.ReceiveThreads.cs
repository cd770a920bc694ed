using System.Net;
using System.Net.Sockets;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

/// <summary><see cref="UdpProcessing.ReceiveThreads"/>: dedicated threads that receive and reply.</summary>
/// <remarks>
/// Each thread takes an args, waits in a blocking receive into its buffer, sends the reply from it, returns it to the
/// pool, and starts again: a datagram is answered on the thread the kernel wakes, with no hand-off. A stop shuts the
/// sockets' receive side down, which wakes every blocked receive on Linux; elsewhere the threads end when the sockets
/// close at the end of the stop grace period. A thread whose loop fails runs it again after a pause, so the number of
/// receive threads stays what the options say.
/// </remarks>
public partial class UdpServer
{
    /// <summary>Starts the receive threads, each on one of <paramref name="sockets"/> in turn.</summary>
    private Task[] StartReceiveThreads(Socket[] sockets)
    {
        // The sockets never run an asynchronous operation, so they stay in blocking mode: a receive waits in the kernel,
        // not in the runtime's event loop, and the kernel wakes one waiting thread per datagram. With a socket per
        // thread (reuse-port), the threads share nothing but the pool and the counters.
        var threads = new Task[_concurrentReceives];
        for (int i = 0; i < threads.Length; i++)
        {
            Socket socket = sockets[i % sockets.Length];
            var ended = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            var thread = new Thread(() =>
            {
                try
                {
                    RunReceiveThread(socket);
                }
                finally
                {
                    ended.SetResult();
                }
            })
            {
                // A process that exits without stopping the server is not kept alive by a blocked receive.
                IsBackground = true,
                Name = "UDP receive",
            };
            thread.UnsafeStart();
            threads[i] = ended.Task;
        }

        return threads;
    }

    private void WakeReceiveThreads()
    {
        foreach (Socket socket in _sockets)
        {
            try
            {
                socket.Shutdown(SocketShutdown.Receive);
            }
            catch (SocketException)
            {
                // NotConnected, expected on an unconnected datagram socket: on Linux the blocked receives are woken
                // all the same, and sends still work. Elsewhere they wake when the socket is closed.
            }
            catch (ObjectDisposedException)
            {
                // Already closed: nothing is blocked any more.
            }
        }
    }

    /// <summary>The body of a receive thread: runs <see cref="ReceiveAndReply"/> until the server stops, again
    /// after <see cref="SocketServer.RestartDelay"/> when it fails.</summary>
    private void RunReceiveThread(Socket socket)
    {
        while (true)
        {
            try
            {
                ReceiveAndReply(socket);
                return;
            }
            catch (Exception ex)
            {
                // The stop sets the token's wait handle, so it never waits for the pause to end.
                if (!OnLoopFailed(ex, "receive") || StoppingToken.WaitHandle.WaitOne(RestartDelay))
                {
                    return;
                }
            }

            Count.LoopRestarted();
        }
    }

    /// <summary>The receive loop: receives and answers datagrams until the server stops.</summary>
    /// <exception cref="Exception">Anything unexpected; every args taken is back in the pool by then.</exception>
    private void ReceiveAndReply(Socket socket)
    {
        CancellationToken stopping = StoppingToken;
        AddressFamily family = socket.AddressFamily;

        // The socket writes each sender's address here, and the args' endpoint takes it in place, as it does
        // after an asynchronous receive (ReusableIPEndPoint.Create): nothing allocated per datagram.
        var sender = new SocketAddress(family);
        while (!stopping.IsCancellationRequested)
        {
            if (TakeSlotUnlessStopping() is not { } slot)
            {
                break;
            }

            bool replied = false;
            try
            {
                var args = (PooledSocketArgs)slot.Object;
                SocketError error = Receive(socket, args, sender, out int length);
                if (error == SocketError.Success && length == 0 && stopping.IsCancellationRequested)
                {
                    // Woken by the stop's shutdown, not by a datagram.
                    break;
                }

                if (error == SocketError.Success)
                {
                    error = TakeSender(args, family, sender);
                }

                UdpDatagramFilter.Outcome outcome = _filter.Judge(args, error, length);
                if (outcome == UdpDatagramFilter.Outcome.Stop)
                {
                    break;
                }

                if (outcome == UdpDatagramFilter.Outcome.Answer)
                {
                    // EndReply returns the args to the pool, whatever the send did; a deferred reply, once it ends.
                    replied = true;
                    if (TryReply(socket, args, ref length, out Exception? failure))
                    {
                        EndReply(args, length, failure);
                    }
                }
            }
            finally
            {
                if (!replied)
                {
                    Pool.Release(slot);
                }
            }
        }
    }

    /// <summary>Makes the sender the socket reported the args' <see cref="SocketAsyncEventArgs.RemoteEndPoint"/>,
    /// in place, as an asynchronous receive does.</summary>
    /// <returns><see cref="SocketError.Success"/>, or <see cref="SocketError.AddressNotAvailable"/> for an address
    /// that is not an IP endpoint of the socket's family (which the kernel never reports).</returns>
    private static SocketError TakeSender(PooledSocketArgs args, AddressFamily family, SocketAddress sender)
    {
        try
        {
            args.RemoteEndPoint = args.SenderEndPoint(family).Create(sender);
            return SocketError.Success;
        }
        catch (ArgumentException)
        {
            return SocketError.AddressNotAvailable;
        }
    }

    /// <summary>Takes an args for the next receive, or returns <see langword="null"/> once the server stops.</summary>
    private PoolSlot<SocketAsyncEventArgs>? TakeSlotUnlessStopping()
    {
        // The pool holds an args for each receive thread and each pending datagram, so the take completes at once
        // unless deferred replies hold all of the latter: then the thread waits, and the kernel queues what comes.
        ValueTask<PoolSlot<SocketAsyncEventArgs>?> taking = TakeSlotUnlessStoppingAsync();
        return taking.IsCompletedSuccessfully ? taking.Result : taking.AsTask().GetAwaiter().GetResult();
    }

    /// <summary>Waits for one datagram into <paramref name="args"/>' buffer; on a wildcard address, with the address it
    /// was sent to.</summary>
    /// <returns>The receive's outcome; <see cref="SocketError.OperationAborted"/> once the socket is closed, or
    /// when the receive fails in any way while the server stops.</returns>
    private SocketError Receive(Socket socket, PooledSocketArgs args, SocketAddress sender, out int length)
    {
        try
        {
            // A datagram larger than the buffer arrives truncated to its length, one byte above the largest
            // accepted size, and is dropped as too large.
            if (!_replyFromDestination)
            {
                length = socket.ReceiveFrom(args.OwnBuffer, SocketFlags.None, sender);
                return SocketError.Success;
            }

            SocketError error = PacketInfoSocket.Receive(socket, args.OwnBuffer, sender, out args.ReplySource, out length);
            return error == SocketError.Success || !StoppingToken.IsCancellationRequested ? error : SocketError.OperationAborted;
        }
        catch (SocketException ex) when (!StoppingToken.IsCancellationRequested)
        {
            length = 0;
            return ex.SocketErrorCode;
        }
        catch (Exception ex) when (ex is ObjectDisposedException || StoppingToken.IsCancellationRequested)
        {
            // Closed, or shut down by the stop: a receive after the shutdown may even fail on the empty sender
            // address it reports.
            length = 0;
            return SocketError.OperationAborted;
        }
    }
}
