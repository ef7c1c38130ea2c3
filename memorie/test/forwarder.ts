/**
 * A TCP port forwarder for tests: its URL stands for "the port a client keeps", and the test decides which real
 * node answers there (or none, as while a node restarts). It forwards bytes only; the nodes behind it are real.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";

export class Forwarder {
  private target: URL | null;
  private readonly open = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    target: string | null,
  ) {
    this.target = target === null ? null : new URL(target);
  }

  /** Listen on a free local port, forwarding to `target` (a node URL), or resetting connections when null. */
  static async start(target: string | null): Promise<Forwarder> {
    const server = createServer();
    const forwarder = new Forwarder(server, target);
    server.on("connection", (client) => forwarder.accept(client));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return forwarder;
  }

  get url(): string {
    const address = this.server.address() as { port: number };
    return `http://127.0.0.1:${address.port}`;
  }

  /** From now on, new connections reach `target` (null: they are reset); open connections are cut. */
  switchTo(target: string | null): void {
    this.target = target === null ? null : new URL(target);
    for (const socket of this.open) socket.destroy();
    this.open.clear();
  }

  async close(): Promise<void> {
    this.switchTo(null);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    const target = this.target;
    if (target === null) {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      this.open.add(a);
      a.on("error", () => b.destroy());
      a.on("close", () => {
        this.open.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  }
}
