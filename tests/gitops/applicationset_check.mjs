// Checks ApplicationSet manifests against Argo CD's own ApplicationSet types:
// those of @kubernetes-models/argo-cd, generated from Argo CD v3's Go API
// (github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1), installed by
// tests/gitops/argocd-models.sh. Two checks, as the API server with kubectl's
// strict field validation makes them:
//   - the package's validator (types, required fields, enums);
//   - no field the Go types do not have (the validator lets unknown ones pass;
//     the field names come from the package's type declarations).
//   node applicationset_check.mjs NODE_MODULES FILE...
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, ...files] = process.argv.slice(2);
if (!modules || files.length === 0) {
  console.error("usage: node applicationset_check.mjs NODE_MODULES FILE...");
  process.exit(2);
}
const load = (spec) => import(pathToFileURL(join(modules, spec)).href);
const { parse } = await load("yaml/dist/index.js");
const appset = "@kubernetes-models/argo-cd/argoproj.io/v1alpha1/ApplicationSet";
const { ApplicationSet } = await load(appset + ".js");

// The first interface of a declaration file: its properties' type texts, and the
// file's imports (type name -> declaration file).
const declarations = new Map();
function declaration(file) {
  if (declarations.has(file)) return declarations.get(file);
  const text = readFileSync(file, "utf8");
  const imports = new Map();
  for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
    const spec = m[2].replace(/\.js$/, "");
    imports.set(m[1], spec.startsWith(".") ? join(dirname(file), spec + ".d.ts")
                                           : join(modules, spec + ".d.ts"));
  }
  const props = new Map();
  const body = text.match(/^export interface \w+(?: extends [\w, ]+)? \{\n([\s\S]*?)^\}/m);
  if (body) {
    const lines = body[1].split("\n");
    for (let i = 0; i < lines.length; i++) {
      const m = lines[i].match(/^ {4}"([^"]+)"\??: (.*?);?$/);
      if (!m) continue;
      let type = m[2];
      if (type === "{") {  // a map: { [key: string]: T; }
        const v = (lines[i + 1] || "").match(/^ {8}\[key: string\]: (.*);$/);
        type = v ? "Map<" + v[1] + ">" : "object";
      }
      props.set(m[1], type);
    }
  }
  const d = { file, imports, props: body ? props : null };
  declarations.set(file, d);
  return d;
}

const errors = [];
function checkObject(value, d, path) {
  if (d.props === null || value === null || typeof value !== "object" || Array.isArray(value)) return;
  for (const [key, v] of Object.entries(value)) {
    const type = d.props.get(key);
    if (type === undefined) {
      errors.push(`${path}${key}: unknown field (Argo CD's type has ${[...d.props.keys()].join(", ")})`);
      continue;
    }
    checkType(v, type, d, `${path}${key}.`);
  }
}
function checkType(v, type, d, path) {
  let m;
  if ((m = type.match(/^Array<(.*)>$/)) && Array.isArray(v)) {
    v.forEach((item, i) => checkType(item, m[1], d, `${path.slice(0, -1)}[${i}].`));
  } else if ((m = type.match(/^Map<(.*)>$/)) && v && typeof v === "object") {
    for (const [k, item] of Object.entries(v)) checkType(item, m[1], d, `${path}${k}.`);
  } else if (/^I\w+$/.test(type) && d.imports.has(type) && existsSync(d.imports.get(type))) {
    checkObject(v, declaration(d.imports.get(type)), path);
  }
}

let failed = 0;
for (const file of files) {
  const doc = parse(readFileSync(file, "utf8"));
  errors.length = 0;
  try {
    new ApplicationSet(doc).validate();
  } catch (e) {
    errors.push(e.message);
  }
  checkObject(doc, declaration(join(modules, appset + ".d.ts")), "");
  if (errors.length > 0) {
    failed++;
    for (const e of errors) console.log(`FAIL ${file}: ${e}`);
  } else {
    console.log(`ok ${file}`);
  }
}
console.log(`${files.length - failed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
