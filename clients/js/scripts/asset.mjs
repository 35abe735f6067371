// The demo server (crates/belay-server) serves this client at /belay.js, and
// cargo cannot run npm: the built bundle is committed there as
// crates/belay-demo/assets/belay.js. esbuild's output is deterministic, so
// the committed copy must equal a fresh `npm run build` byte for byte.
//
//   node scripts/asset.mjs          fail (exit 1) if the copy differs from dist/belay.js
//   node scripts/asset.mjs --write  update the copy
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { ROOT } from "./bundle.mjs";

const built = ROOT + "dist/belay.js";
const asset = ROOT + "../../crates/belay-demo/assets/belay.js";
if (!existsSync(built)) {
  console.error("dist/belay.js is missing: run `npm run build` first");
  process.exit(2);
}
if (process.argv.includes("--write")) {
  copyFileSync(built, asset);
  console.log("updated crates/belay-demo/assets/belay.js");
} else if (!existsSync(asset) || !readFileSync(asset).equals(readFileSync(built))) {
  console.error("crates/belay-demo/assets/belay.js differs from a fresh build of clients/js: run `npm run build && npm run sync-asset` and commit it");
  process.exit(1);
} else {
  console.log("crates/belay-demo/assets/belay.js matches the fresh build");
}
