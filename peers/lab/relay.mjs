// The socket.io lab server's front door: a TCP relay in the same process
// that can freeze every connection, as the Belay demo's stream layer does.
//
// Freeze: both sockets of every link (and of links accepted while frozen)
// stop being read, so nothing moves either way; what either side writes
// waits in the kernel, and a close or FIN from either side is held with it
// (a paused socket emits no `end`). The socket.io server's own heartbeat
// still runs behind it and may close the frozen sessions; those closes
// reach the client when the freeze ends, as in the Belay demo.
import net from "node:net";

/** A relay from `listen` to the app server at `upstream` (both host:port). */
export class Relay {
  constructor(upstream) {
    this.upstream = upstream;
    this.links = new Set();
    this.frozen = false;
    this.server = net.createServer((client) => this.#link(client));
  }

  /** Listen on host:port (port 0: any); resolves to the bound address. */
  listen(host, port) {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => resolve(this.server.address()));
    });
  }

  /** Freeze (true) or thaw (false) every link. */
  freeze(on) {
    this.frozen = on;
    for (const link of this.links) for (const s of link) on ? s.pause() : s.resume();
  }

  /** Stop accepting; the links go on. */
  stopAccepting() {
    this.server.close();
  }

  /** Stop accepting and drop every link. */
  close() {
    this.server.close();
    for (const link of this.links) for (const s of link) s.destroy();
  }

  #link(client) {
    const up = net.connect(this.upstream.port, this.upstream.host);
    const link = [client, up];
    this.links.add(link);
    client.setNoDelay(true);
    up.setNoDelay(true);
    if (this.frozen) for (const s of link) s.pause();
    const pipe = (from, to) => {
      from.on("data", (chunk) => {
        // Back-pressure: stop reading until the other side drains.
        if (!to.write(chunk)) {
          from.pause();
          to.once("drain", () => { if (!this.frozen) from.resume(); });
        }
      });
      from.on("end", () => to.end());
    };
    pipe(client, up);
    pipe(up, client);
    const gone = () => {
      this.links.delete(link);
      client.destroy();
      up.destroy();
    };
    client.on("close", gone);
    up.on("close", gone);
    client.on("error", () => {});
    up.on("error", () => {});
  }
}
