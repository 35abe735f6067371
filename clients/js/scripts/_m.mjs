import { build } from "esbuild";
import { gzipSync } from "node:zlib";
const r = await build({ entryPoints: ["src/index.ts"], bundle: true, format: "esm", target: "es2020", minify: true, write: false, metafile: true, legalComments:"none", mangleProps: /^_/ });
const code = r.outputFiles[0].text;
const out = Object.values(r.metafile.outputs)[0];
const total = gzipSync(code,{level:9}).length;
// marginal cost: rebuild without each module is impossible; use standalone gz of each module's bytes
console.log("total gz", total, "min", code.length);
for (const [k,v] of Object.entries(out.inputs).sort((a,b)=>b[1].bytesInOutput-a[1].bytesInOutput)) console.log(v.bytesInOutput, k);
