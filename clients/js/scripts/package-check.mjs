// `npm run package-check` (BELAY_BIN names a `belay` binary): @belay/client as
// people install it. Packs the package (prepack builds it), checks what the
// tarball holds, installs it with ws, bun and esbuild into a scratch project
// in a temporary directory, and from there:
//
// * loads every entry with `import` and `require` from Node and from Bun;
// * compiles an app against its type declarations (nodenext, bundler and
//   node10 resolution);
// * bundles apps with esbuild: each entry's gzipped size (the default entry
//   within its budget), `sideEffects` (an unused entry leaves nothing), and
//   one app of every entry, run against `belay serve --demo` over the binary
//   codec under Node + ws, Node's own WebSocket and Bun;
// * runs package-check/runtime.mjs (connect, subscribe, request; server
//   killed and restarted; freeze; recovery) under Node with ws, Node's own
//   WebSocket (--experimental-websocket) and Bun, side by side.
//
// KEEP_SCRATCH=1 keeps the scratch project. Exits 1 if any check fails.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { BINARY_BUDGET_GZ, BUDGET_GZ, ROOT, gzSize } from "./bundle.mjs";

// What the scratch project installs beside the tarball (an app's usual picks).
const DEPS = ["ws@8.23.1", "bun@1.4.4", "esbuild@0.28.2"];
const EXPORTS = JSON.parse(readFileSync(ROOT + "scripts/package-check/exports.json", "utf8"));
const FILES = ["runtime.mjs", "entries.mjs", "entries.cjs", "types.mts", "app.mjs", "exports.json"];

const started = performance.now();
const secs = (since) => ((performance.now() - since) / 1000).toFixed(1);
let passed = 0;
let failed = 0;
async function check(name, f) {
  const t = performance.now();
  try {
    const detail = await f();
    passed++;
    console.log(`ok    ${name} (${secs(t)} s)${detail ? `: ${detail}` : ""}`);
  } catch (e) {
    failed++;
    console.log(`FAIL  ${name} (${secs(t)} s): ${e instanceof Error ? e.message : e}`);
  }
}

/** Runs `cmd` to its end within `limitMs`; resolves with its output, rejects with it on a non-zero exit or at the limit. */
function run(cmd, args, { cwd, limitMs = 60_000, env = process.env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${cmd} ${args.join(" ")}: still running after ${limitMs} ms (a process that does not exit by itself)\n${out}`));
    }, limitMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out.trim());
      else reject(new Error(`${cmd} ${args.join(" ")}: exit ${code ?? signal}\n${out}`));
    });
  });
}

let BELAY_BIN = process.env.BELAY_BIN;
if (!BELAY_BIN) {
  console.error("package-check: set BELAY_BIN to a `belay` binary (e.g. target/debug/belay)");
  process.exit(2);
}
BELAY_BIN = isAbsolute(BELAY_BIN) ? BELAY_BIN : resolve(BELAY_BIN);
if (!existsSync(BELAY_BIN)) {
  console.error(`package-check: BELAY_BIN=${BELAY_BIN} does not exist`);
  process.exit(2);
}

const scratch = mkdtempSync(join(tmpdir(), "belay-package-check-"));
const app = join(scratch, "app");
const bin = (name) => join(app, "node_modules/.bin", name);
try {
  // 1. Pack from a clean dist/: prepack must build it.
  let tarball = "";
  await check("npm pack builds the package (prepack)", async () => {
    rmSync(ROOT + "dist", { recursive: true, force: true });
    const out = await run("npm", ["pack", "--silent", "--pack-destination", scratch], { cwd: ROOT, limitMs: 120_000 });
    tarball = join(scratch, out.split("\n").filter(Boolean).at(-1));
    if (!existsSync(tarball)) throw new Error(`no tarball: ${out}`);
    return tarball.split("/").at(-1);
  });
  if (!tarball) throw new Error("nothing to install");

  await check("the tarball holds every entry, its map and types, the licences, and nothing else", async () => {
    const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).split("\n").filter(Boolean).map((f) => f.replace(/^package\//, ""));
    const pkg = JSON.parse(readFileSync(ROOT + "package.json", "utf8"));
    const want = ["package.json", "README.md", "LICENSE-MIT", "LICENSE-APACHE"];
    for (const [entry, e] of Object.entries(pkg.exports)) {
      if (typeof e === "string") continue;
      if (!e.types || !e.default) throw new Error(`exports["${entry}"] lacks types or default`);
      want.push(e.types.slice(2), e.default.slice(2), e.default.slice(2) + ".map");
    }
    const missing = want.filter((f) => !files.includes(f));
    if (missing.length) throw new Error(`missing: ${missing.join(", ")}`);
    const stray = files.filter((f) => !/^(dist\/|package\.json$|README\.md$|LICENSE-(MIT|APACHE)$)/.test(f) || f.endsWith(".debug.js"));
    if (stray.length) throw new Error(`not for the package: ${stray.join(", ")}`);
    const map = JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/dist/belay.js.map"], { encoding: "utf8" }));
    if (!map.sourcesContent?.length || map.sourcesContent.length !== map.sources.length) throw new Error("dist/belay.js.map lacks its sources");
    return `${files.length} files`;
  });

  // 2. A scratch project, as an app: the tarball and the usual companions.
  await check(`npm install the tarball + ${DEPS.join(" ")}`, async () => {
    cpSync(ROOT + "scripts/package-check", app, { recursive: true });
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "belay-package-check-app", version: "0.0.0", private: true }, null, 2));
    await run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", tarball, ...DEPS], { cwd: app, limitMs: 180_000 });
    for (const f of FILES) if (!existsSync(join(app, f))) throw new Error(`${f} not copied`);
    return `bun ${await run(bin("bun"), ["--version"], { cwd: app })}`;
  });

  // 3. Loading: ESM and CommonJS, Node and Bun.
  await check("node: import every entry", () => run(process.execPath, ["entries.mjs"], { cwd: app }));
  await check("node: require every entry (require(esm), Node >= 20.19)", () => run(process.execPath, ["--no-warnings", "entries.cjs"], { cwd: app }));
  await check("bun: import every entry", () => run(bin("bun"), ["entries.mjs"], { cwd: app }));
  await check("bun: require every entry", () => run(bin("bun"), ["entries.cjs"], { cwd: app }));

  // 4. Types, as an app's TypeScript resolves them.
  const tsc = ROOT + "node_modules/typescript/bin/tsc";
  // node10: TypeScript's legacy resolution, which reads typesVersions instead of exports.
  for (const resolution of [["nodenext", "nodenext"], ["esnext", "bundler"], ["esnext", "node10"]]) {
    await check(`tsc --module ${resolution[0]} --moduleResolution ${resolution[1]}: the declarations of every entry`, () =>
      run(process.execPath, [tsc, "--noEmit", "--strict", "--target", "es2022", "--lib", "es2022,dom", "--module", resolution[0], "--moduleResolution", resolution[1], "types.mts"], { cwd: app }));
  }

  // 5. A bundler: esbuild, as installed in the app.
  const esbuild = (await import(pathToFileURL(join(app, "node_modules/esbuild/lib/main.js")).href)).default;
  const bundleOf = async (contents, options = {}) => {
    const r = await esbuild.build({ stdin: { contents, resolveDir: app, loader: "js" }, bundle: true, format: "esm", target: "es2020", minify: true, write: false, logLevel: "silent", ...options });
    return r.outputFiles[0].contents;
  };
  await check(`esbuild: each entry's size in an app (default entry <= ${BUDGET_GZ} B gzipped, binary <= ${BINARY_BUDGET_GZ} B)`, async () => {
    const sizes = [];
    for (const entry of Object.keys(EXPORTS)) {
      const gz = gzSize(await bundleOf(`export * from "${entry}";`));
      sizes.push(`${entry.replace("@belay/client", "") || "default"} ${gz} B`);
      if (entry === "@belay/client" && gz > BUDGET_GZ) throw new Error(`the default entry is ${gz} B gzipped, over ${BUDGET_GZ} B`);
      if (entry === "@belay/client/binary" && gz > BINARY_BUDGET_GZ) throw new Error(`the binary entry is ${gz} B gzipped, over ${BINARY_BUDGET_GZ} B`);
    }
    return sizes.join(", ");
  });
  await check("esbuild: an entry imported and unused leaves nothing (sideEffects: false)", async () => {
    const code = await bundleOf(Object.keys(EXPORTS).map((e) => `import "${e}";`).join("\n"));
    if (code.length > 0) throw new Error(`${code.length} B left: ${new TextDecoder().decode(code).slice(0, 200)}`);
  });

  const server = await startServer();
  try {
    await check("esbuild: an app of every entry, bundled", () =>
      esbuild.build({ entryPoints: [join(app, "app.mjs")], bundle: true, format: "esm", platform: "neutral", target: "es2022", minify: true, external: ["ws"], outfile: join(app, "app.bundle.mjs"), logLevel: "silent" }).then(() => undefined));
    const ways = [
      ["node + ws", process.execPath, ["app.bundle.mjs", server.ws, "ws"]],
      ["node --experimental-websocket", process.execPath, ["--experimental-websocket", "--no-warnings", "app.bundle.mjs", server.ws]],
      ["bun", bin("bun"), ["app.bundle.mjs", server.ws]],
    ];
    for (const [name, cmd, args] of ways) {
      await check(`the bundled app under ${name}, binary codec, against belay serve --demo`, () => run(cmd, args, { cwd: app, limitMs: 30_000 }));
    }
  } finally {
    server.child.kill("SIGKILL");
  }

  // 6. The runtimes, side by side (each its own server on a free port).
  const env = { ...process.env, BELAY_BIN };
  const runtimes = [
    ["node + ws", process.execPath, ["runtime.mjs", "ws"]],
    ["node --experimental-websocket", process.execPath, ["--experimental-websocket", "--no-warnings", "runtime.mjs", "builtin"]],
    ["bun", bin("bun"), ["runtime.mjs", "builtin"]],
  ];
  const outcomes = runtimes.map(([, cmd, args]) => run(cmd, args, { cwd: app, env, limitMs: 90_000 }).then((out) => ({ out }), (error) => ({ error })));
  for (const [i, [name]] of runtimes.entries()) {
    await check(`runtime ${name}: connect, subscribe, request; kill + restart; freeze; recovery`, async () => {
      const o = await outcomes[i];
      if (o.error) throw o.error;
      return o.out;
    });
  }
} catch (e) {
  failed++;
  console.log(`FAIL  package check: ${e instanceof Error ? e.message : e}`);
} finally {
  if (process.env.KEEP_SCRATCH) console.log(`scratch project kept: ${app}`);
  else rmSync(scratch, { recursive: true, force: true });
}
console.log(`package check in ${secs(started)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

/** `belay serve --demo` on a free loopback port. */
function startServer() {
  const child = spawn(BELAY_BIN, ["serve", "--demo", "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`server did not start: ${seen}`)), 30_000);
    const onData = (chunk) => {
      seen += chunk;
      const m = /open (http:\/\/127\.0\.0\.1:\d+)\//.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve({ child, ws: m[1].replace("http", "ws") + "/ws" });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => reject(new Error(`server exited with ${code}: ${seen}`)));
  });
}
