import net from 'node:net';

/**
 * One direction of a proxied connection: the bytes it has read and not yet
 * delivered, in order. A chunk is delivered once its delay has passed and
 * no blackhole holds the lane, and never before a chunk read ahead of it, so
 * the stream arrives whole and in order whatever the faults, as TCP's
 * retransmissions deliver it once a link heals.
 */
class Lane {
  /** A null chunk is the sender's FIN: delivered after every byte ahead of it. */
  private readonly queue: { chunk: Buffer | null; dueAt: number }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly to: net.Socket,
    private readonly proxy: NetworkFaultProxy,
  ) {}

  /** Bytes read and not yet delivered. */
  get held(): number {
    return this.queue.reduce((sum, { chunk }) => sum + (chunk?.length ?? 0), 0);
  }

  push(chunk: Buffer | null): void {
    this.queue.push({ chunk, dueAt: Date.now() + this.proxy.delayMs });
    this.pump();
  }

  /** Delivers every chunk that is due, and wakes up for the next one. */
  pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.proxy.blackholed || this.to.destroyed) return;
    while (this.queue.length > 0) {
      const wait = this.queue[0]!.dueAt - Date.now();
      if (wait > 0) {
        this.timer = setTimeout(() => this.pump(), wait);
        return;
      }
      const { chunk } = this.queue.shift()!;
      if (chunk) this.to.write(chunk);
      else this.to.end();
    }
  }

  /** Forgets what it held: the connection is gone. */
  drop(): void {
    clearTimeout(this.timer);
    this.queue.length = 0;
  }
}

/**
 * A TCP proxy in front of a redis-server that can delay, blackhole and reset
 * the connections through it, as a faulty network does between a worker or a
 * producer and Redis:
 *
 * - {@link delay} holds every chunk that long in each direction;
 * - {@link blackhole} delivers nothing either way while every connection
 *   stays open (a connection opened meanwhile is accepted and held too), and
 *   {@link heal} delivers what was held, in order: nothing is dropped from
 *   the middle of a stream;
 * - {@link reset} destroys every connection (the client reads ECONNRESET);
 *   what they held is lost with them, as it is with a real reset.
 */
export class NetworkFaultProxy {
  /** The delay added to each chunk, in ms. */
  delayMs = 0;
  /** Whether a blackhole holds every byte. */
  blackholed = false;
  /** Connections accepted so far. */
  accepted = 0;
  /** Connections destroyed by {@link reset}. */
  resets = 0;
  private readonly connections = new Set<{ sockets: net.Socket[]; lanes: Lane[] }>();

  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
  ) {
    server.on('connection', (client) => this.relay(client));
  }

  static async start(redisUrl: string): Promise<NetworkFaultProxy> {
    const { hostname, port } = new URL(redisUrl);
    const proxy = new NetworkFaultProxy(net.createServer({ allowHalfOpen: true }), {
      host: hostname,
      port: Number(port),
    });
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    const { port } = this.server.address() as net.AddressInfo;
    return `redis://127.0.0.1:${port}`;
  }

  /** Bytes read and not yet delivered, both ways, over every open connection. */
  get held(): number {
    let bytes = 0;
    for (const { lanes } of this.connections) for (const lane of lanes) bytes += lane.held;
    return bytes;
  }

  /** Holds every chunk read from now on `ms` before delivering it (0: none). */
  delay(ms: number): void {
    this.delayMs = ms;
  }

  /** Delivers nothing either way from now on, keeping every connection open. */
  blackhole(): void {
    this.blackholed = true;
  }

  /** Ends a blackhole: delivers what it held, in order, then forwards as before. */
  heal(): void {
    this.blackholed = false;
    for (const { lanes } of this.connections) for (const lane of lanes) lane.pump();
  }

  /** Destroys every open connection; what they held is lost. New connections are accepted as before. */
  reset(): void {
    for (const connection of this.connections) {
      for (const lane of connection.lanes) lane.drop();
      for (const socket of connection.sockets) socket.resetAndDestroy();
      this.resets++;
    }
    this.connections.clear();
  }

  async stop(): Promise<void> {
    this.blackholed = false;
    this.reset();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private relay(client: net.Socket): void {
    this.accepted++;
    const upstream = net.connect({ port: this.target.port, host: this.target.host, allowHalfOpen: true });
    const toUpstream = new Lane(upstream, this);
    const toClient = new Lane(client, this);
    const connection = { sockets: [client, upstream], lanes: [toUpstream, toClient] };
    this.connections.add(connection);
    // Both ends half-open: each direction ends when its FIN is delivered.
    // Writes before the upstream connects are buffered by the socket, in order.
    for (const [socket, other, out, back] of [
      [client, upstream, toUpstream, toClient],
      [upstream, client, toClient, toUpstream],
    ] as const) {
      socket.on('data', (chunk: Buffer) => out.push(chunk));
      // A close is delivered after what was sent before it, as a FIN is.
      socket.on('end', () => out.push(null));
      // A reset is not: the other side is reset at once.
      socket.on('error', () => other.destroy());
      socket.on('close', () => {
        back.drop();
        if (other.destroyed) this.connections.delete(connection);
      });
    }
  }
}
