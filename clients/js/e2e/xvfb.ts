/**
 * Xvfb displays for the browsers that need a window (WebKitGTK's
 * MiniBrowser, headed Chromium), and the helper processes the e2e browsers
 * start, ended together.
 */
import { spawn, type ChildProcess } from "node:child_process";

/** A display of its own: Xvfb writes the free display number it took to fd 3. The process goes into `started`. */
export async function startXvfb(started: ChildProcess[]): Promise<string> {
  const xvfb = spawn("Xvfb", ["-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], { stdio: ["ignore", "ignore", "pipe", "pipe"] });
  track(xvfb, started);
  return new Promise<string>((resolve, reject) => {
    let seen = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error(`Xvfb gave no display within 20 s: ${err}`)), 20_000);
    xvfb.stderr!.on("data", (d) => (err += d));
    xvfb.stdio[3]!.on("data", (d) => {
      seen += d;
      if (seen.includes("\n")) {
        clearTimeout(timer);
        resolve(seen.trim());
      }
    });
    xvfb.on("error", (e) => reject(new Error(`cannot start Xvfb (the test command installs xvfb): ${e.message}`)));
    xvfb.on("exit", (code) => reject(new Error(`Xvfb exited with ${code}: ${err}`)));
  });
}

export const stopAll = (started: ChildProcess[]) => {
  for (const c of started.reverse()) if (c.exitCode === null && c.signalCode === null) c.kill();
};

/** Every Xvfb and driver still running, ended if the test process exits without closing them (a test timed out in beforeAll). */
const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill();
});
export const track = (c: ChildProcess, started: ChildProcess[]) => {
  started.push(c);
  running.add(c);
  c.on("exit", () => running.delete(c));
};
