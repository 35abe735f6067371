/**
 * Debian's nginx in front of a server, on a free loopback port, in a
 * temporary directory of its own; for the fallback's end-to-end tests.
 * Its default proxying drops the `Upgrade` header (so the server refuses
 * the WebSocket, as behind many corporate proxies) and buffers responses;
 * `passUpgrades(true)` rewrites the configuration to pass them and reloads.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./backend_example.js";

export interface Nginx {
  origin: string;
  /** Pass WebSocket upgrades (`true`) or drop them, and reload; resolves once the new workers answer. */
  passUpgrades(pass: boolean): Promise<void>;
  stop(): void;
}

export async function startNginx(upstream: string, passUpgrades = false): Promise<Nginx> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "belay-nginx-"));
  const conf = join(dir, "nginx.conf");
  const write = (pass: boolean) => {
    const upgrade = pass
      ? "proxy_http_version 1.1; proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection $connection_upgrade;"
      : "";
    writeFileSync(conf, [
      process.getuid?.() === 0 ? "user root;" : "",
      "daemon off;",
      "worker_processes 1;",
      `pid ${dir}/nginx.pid;`,
      `error_log ${dir}/error.log;`,
      "events { worker_connections 512; }",
      "http {",
      "  access_log off;",
      `  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;`,
      `  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;`,
      "  map $http_upgrade $connection_upgrade { default upgrade; '' close; }",
      `  server { listen 127.0.0.1:${port}; location / { proxy_pass ${upstream}; ${upgrade} } }`,
      "}",
    ].join("\n"));
  };
  write(passUpgrades);
  const child: ChildProcess = spawn(process.env["BELAY_NGINX"] ?? "nginx", ["-p", dir, "-c", conf, "-e", join(dir, "error.log")], { stdio: "ignore" });
  const failed = new Promise<never>((_, reject) => {
    child.on("error", (e) => reject(new Error(`cannot start nginx (the test command installs it): ${e.message}`)));
    child.on("exit", (code) => reject(new Error(`nginx exited with ${code}`)));
  });
  const listening = async () => {
    for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 20))) {
      const ok = await new Promise<boolean>((resolve) => {
        const s = connect(port, "127.0.0.1", () => (s.end(), resolve(true)));
        s.on("error", () => resolve(false));
      });
      if (ok) return;
    }
    throw new Error("nginx did not listen within 10 s");
  };
  await Promise.race([listening(), failed]);
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    async passUpgrades(pass: boolean) {
      write(pass);
      child.kill("SIGHUP");
      // The new workers take new connections once the master has re-read the file:
      // wait until an upgrade through it gets the answer the new setting gives.
      for (const until = Date.now() + 10_000; ; await new Promise((r) => setTimeout(r, 50))) {
        const status = await upgradeStatus(port);
        if ((status === 101) === pass) return;
        if (Date.now() > until) throw new Error(`nginx did not apply passUpgrades(${pass}) within 10 s (upgrade answered ${status})`);
      }
    },
    stop() {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The status line's code for a WebSocket upgrade of `/ws` through the port. */
function upgradeStatus(port: number): Promise<number> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1", () => {
      s.write(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    });
    let head = "";
    s.on("data", (d) => {
      head += d.toString();
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      if (m) {
        s.destroy();
        resolve(Number(m[1]));
      }
    });
    s.on("error", () => resolve(0));
    s.on("close", () => resolve(0));
  });
}
