// The shared conformance vectors (spec/vectors in the repository) copied into
// the package as vectors/, at build time and before the tests (`npm test`
// runs this first), so the tests read nothing outside the package. Outside the
// repository (no spec/ beside the package) the copy already there is kept.
import { cpSync, existsSync, rmSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SPEC = fileURLToPath(new URL("../../../spec/vectors", import.meta.url));
export const VECTORS = ROOT + "vectors";

export function copyVectors() {
  if (!existsSync(SPEC)) {
    if (existsSync(VECTORS)) return;
    throw new Error(`no conformance vectors: neither ${SPEC} nor ${VECTORS}`);
  }
  rmSync(VECTORS, { recursive: true, force: true });
  cpSync(SPEC, VECTORS, { recursive: true });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) copyVectors();
