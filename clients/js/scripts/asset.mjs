// The servers serve this client from copies compiled into their binaries, and
// cargo cannot run npm: the built bundles are committed there.
//   - the demo page (crates/belay-demo) at /belay.js (`@belay/client/full`)
//     and /fallback.js (its SSE fallback): crates/belay-demo/assets/;
//   - the admin web UI (crates/belay-server) at /admin/belay.js (the default
//     entry): crates/belay-server/assets/admin/belay.js.
// esbuild's output is deterministic, so each committed copy must equal a
// fresh `npm run build` byte for byte, less the line that links the source
// map (the servers serve no maps).
//
//   node scripts/asset.mjs          fail (exit 1) if a copy differs from dist/
//   node scripts/asset.mjs --write  update the copies
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { ROOT, withoutMapLink } from "./bundle.mjs";

let failed = false;
// [committed copy, built file in dist/]
const COPIES = [
  ["crates/belay-demo/assets/belay.js", "full.js"],
  ["crates/belay-demo/assets/fallback.js", "fallback.js"],
  ["crates/belay-server/assets/admin/belay.js", "belay.js"],
];
for (const [copy, built] of COPIES) {
  const from = ROOT + "dist/" + built;
  const asset = ROOT + "../../" + copy;
  if (!existsSync(from)) {
    console.error(`dist/${built} is missing: run \`npm run build\` first`);
    process.exit(2);
  }
  if (process.argv.includes("--write")) {
    writeFileSync(asset, withoutMapLink(readFileSync(from)));
    console.log(`updated ${copy}`);
  } else if (!existsSync(asset) || !readFileSync(asset).equals(withoutMapLink(readFileSync(from)))) {
    console.error(`${copy} differs from a fresh build of clients/js: run \`npm run build && npm run sync-asset\` and commit it`);
    failed = true;
  } else {
    console.log(`${copy} matches the fresh build`);
  }
}
if (failed) process.exit(1);
