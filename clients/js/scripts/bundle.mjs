// Shared by the build script and the size test: one minified ES module.
import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Minified + gzipped budget of the bundle, in bytes. */
// The goal is 6 KB (see README, "Size"); this ceiling only ratchets down,
// except for new protocol rules (7600 -> 7750 for checked resumes, the 120 s
// ping clamp and the outbound frame limit with TooLargeError: +144 B; 7750 ->
// 7850 for leaving an advised transport once idle, so no request is sent as a
// draining server closes: +71 B; 7850 -> 8000, the hard budget, for
// token refresh without reconnecting: +185 B). Issue 41 moved the token
// provider's lifecycle (refresh included) and the SSE fallback's switch back
// to `@belay/client/full`, whose build keeps them (`BELAY_FULL`).
export const BUDGET_GZ = 8000;
/**
 * Ceiling of the opt-in `@belay/client/binary` (dist/binary.js): the binary
 * codec and its WebSocket, nothing of the core (which the app has already,
 * from the default entry). 2,714 B when it was added.
 */
export const BINARY_BUDGET_GZ = 3000;

/**
 * `_x`, and the names only the core's `Session` and the default entry's
 * `BelayClient` use between them: the session's driver-facing and
 * inspection methods, its stats' counters, and the keys of its outputs and
 * events (the client reads them and hands the application their other
 * fields only). None is a name of the public API (test/client.test.ts runs
 * it against this build), of a wire message, of a DOM interface, or of
 * anything another entry reads (`nextUnit`, for one, is not here: the
 * opt-in policies draw with it).
 */
const SESSION_ONLY = new RegExp(
  "^(_|(" +
    ["pollOutput", "pollTimeout", "handleInput", "handleTimeout", "isReady", "refreshToken", "tokenFailed", "replaceTransportWhenQuiet", "stop", "readiness", "attempt", "stats"].join("|") +
    "|" +
    ["transportsOpened", "staleInputs", "unknownFrames", "probesSent", "output", "event", "outcome"].join("|") +
    ")$)",
);

/** `sourcemap`: with `outfile`, also write `outfile.map` (the TypeScript sources inside) and link it from the code. `entry`: "index" (the default entry, `@belay/client`), "policies" (`@belay/client/policies`), "publish" (`@belay/client/publish`), "presence" (`@belay/client/presence`), "history" (`@belay/client/history`), "wait" (`@belay/client/wait`), "fallback" (`@belay/client/fallback`), "binary" (`@belay/client/binary`) or "full" (`@belay/client/full`). */
export async function bundle({ minify = true, outfile, entry = "index", sourcemap = false } = {}) {
  const result = await build({
    entryPoints: [ROOT + `src/${entry}.ts`],
    bundle: true,
    format: "esm",
    target: "es2020",
    minify,
    // Members named `_x` are internal (the TypeScript `private` ones and the
    // core's internals): shorten them in the minified build. In the default
    // entry, so are the core session's driver-facing methods: the entry does
    // not export the `Session` (only its `BelayClient` calls them), and no
    // other entry, DOM interface or serde shape has a member of these names.
    mangleProps: minify ? (entry === "index" || entry === "full" ? SESSION_ONLY : /^_/) : undefined,
    sourcemap: sourcemap && outfile ? "linked" : false,
    write: Boolean(outfile),
    outfile: outfile ?? "belay.js",
    metafile: false,
    // The default entry leaves out what only `@belay/client/full` carries (`BELAY_FULL` in src/core/session.ts).
    define: entry === "index" ? { "globalThis.BELAY_FULL": "false" } : {},
    legalComments: "none",
    logLevel: "silent",
  });
  const code = outfile ? null : result.outputFiles[0].contents;
  return code;
}

export function gzSize(bytes) {
  return gzipSync(bytes, { level: 9 }).length;
}

/** A built entry's code without the line that links its source map (what an app's bundler takes in, and the demo server's copy). */
export function withoutMapLink(code) {
  return Buffer.from(Buffer.from(code).toString("utf8").replace(/\n\/\/# sourceMappingURL=\S+\n?$/, "\n"));
}
