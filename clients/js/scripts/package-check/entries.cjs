// Every entry of the installed @belay/client through `require` (CommonJS).
// The package is ES modules only: Node >= 20.19 (and Bun) load them with
// require(); each export of exports.json must be there.
const EXPORTS = require("./exports.json");

const runtime = typeof Bun === "object" ? `bun ${Bun.version}` : `node ${process.versions.node}`;
for (const [entry, names] of Object.entries(EXPORTS)) {
  const module = require(entry);
  const missing = names.filter((n) => module[n] === undefined);
  if (missing.length) throw new Error(`${entry} (require, ${runtime}): missing ${missing.join(", ")}`);
}
console.log(`[${runtime}] require: ${Object.keys(EXPORTS).length} entries, every export present`);
