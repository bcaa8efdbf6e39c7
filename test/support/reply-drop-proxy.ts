import net from 'node:net';

/**
 * A TCP proxy in front of a redis-server that can lose a reply: armed with a
 * command name, it forwards the next request naming it, then swallows Redis's
 * answer and cuts the connection, the way a network failure between "Redis
 * ran it" and "the client read the reply" does. The client reconnects through
 * the proxy, which forwards everything from then on.
 */
export class ReplyDropProxy {
  /** Replies swallowed so far. */
  dropped = 0;
  private armed: string | undefined;
  private lingerMs = 0;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
  ) {
    server.on('connection', (client) => this.relay(client));
  }

  static async start(redisUrl: string): Promise<ReplyDropProxy> {
    const { hostname, port } = new URL(redisUrl);
    const proxy = new ReplyDropProxy(net.createServer(), { host: hostname, port: Number(port) });
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    const { port } = this.server.address() as net.AddressInfo;
    return `redis://127.0.0.1:${port}`;
  }

  /**
   * Loses the reply to the next command whose request holds `command`
   * (case-insensitive, e.g. `evalsha`, or a script's SHA1). With `lingerMs`,
   * the connection is cut that long after that reply instead of at once,
   * and every reply meanwhile is lost too: requests sent together (two
   * claims in flight) all run, and none of their replies arrives.
   */
  dropNextReplyTo(command: string, { lingerMs = 0 }: { lingerMs?: number } = {}): void {
    this.armed = command.toLowerCase();
    this.lingerMs = lingerMs;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private relay(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    this.sockets.add(client).add(upstream);
    // Set once this connection forwarded the armed request: its next reply is lost.
    let losing = false;
    let cutting = false;
    const cut = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (request) => {
      if (this.armed && request.toString('latin1').toLowerCase().includes(this.armed)) {
        this.armed = undefined;
        losing = true;
      }
      upstream.write(request);
    });
    upstream.on('data', (reply) => {
      if (!losing) {
        client.write(reply);
        return;
      }
      this.dropped++;
      if (cutting) return;
      cutting = true;
      if (this.lingerMs > 0) setTimeout(cut, this.lingerMs);
      else cut();
    });
    for (const [socket, other] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      socket.on('error', () => other.destroy());
      socket.on('close', () => {
        other.destroy();
        this.sockets.delete(socket);
      });
    }
  }
}
