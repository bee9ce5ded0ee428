/**
 * Named component schemas for the OpenAPI document. Route schemas are written inline (TypeBox objects), so the
 * generated document repeats every shared shape (the error body on every operation, a document on every
 * document route). This moves each object schema that is titled, or that occurs more than once and is not
 * trivial, to `components.schemas` under a name, and puts a `$ref` everywhere it stood. Names come from the
 * schema's `title`, else from where it first occurs (`<OperationId>Response`, `<Parent><Property>`...), so a
 * generated client gets named types. Equal schemas share one component; the content is unchanged.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const MIN_SHARED_LENGTH = 160;

const isObject = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
/** `PascalCase` of the words in `s`: names of operations and component schemas. */
export const pascal = (s: string) =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join('');

/** JSON with sorted keys: equal schemas have equal keys. */
function canonical(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k] as Json)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

const isNamedCandidate = (node: JsonObject) =>
  (node.type === 'object' && isObject(node.properties)) || (typeof node.title === 'string' && 'type' in node);

type Visit = (schema: JsonObject, hint: string, key: string) => Json;

/**
 * Visits every schema position under an operation, innermost first, with a name hint for each and its key: the
 * canonical JSON of the schema as written, whatever its children were replaced with.
 */
function eachSchema(node: Json, hint: string, visit: Visit): [Json, string] {
  if (Array.isArray(node)) {
    const parts = node.map((v, i) => eachSchema(v, `${hint}${i}`, visit));
    return [parts.map((p) => p[0]), `[${parts.map((p) => p[1]).join(',')}]`];
  }
  if (!isObject(node)) return [node, JSON.stringify(node)];
  const out: JsonObject = {};
  const keys: string[] = [];
  for (const key of Object.keys(node).sort()) {
    const value = node[key] as Json;
    let result: [Json, string];
    if (key === 'properties' && isObject(value)) {
      const props: JsonObject = {};
      const propKeys: string[] = [];
      for (const prop of Object.keys(value).sort()) {
        const [schema, k] = eachSchema(value[prop] as Json, `${hint}${pascal(prop)}`, visit);
        props[prop] = schema;
        propKeys.push(`${JSON.stringify(prop)}:${k}`);
      }
      result = [props, `{${propKeys.join(',')}}`];
    } else if (key === 'items') {
      result = eachSchema(value, `${hint}Item`, visit);
    } else if ((key === 'anyOf' || key === 'oneOf' || key === 'allOf') && Array.isArray(value)) {
      const parts = value.map((v, i) => eachSchema(v, `${hint}Option${i + 1}`, visit));
      result = [parts.map((p) => p[0]), `[${parts.map((p) => p[1]).join(',')}]`];
    } else if (key === 'examples' || key === 'example' || key === 'enum' || key === 'const' || key === 'default') {
      result = [value, canonical(value)];
    } else {
      result = eachSchema(value, hint, visit);
    }
    out[key] = result[0];
    keys.push(`${JSON.stringify(key)}:${result[1]}`);
  }
  const key = `{${keys.join(',')}}`;
  return [isNamedCandidate(out) ? visit(out, hint, key) : out, key];
}

interface Operation {
  operationId?: string;
  parameters?: { name: string; schema?: Json }[];
  requestBody?: { content?: Record<string, { schema?: Json }> };
  responses?: Record<string, { content?: Record<string, { schema?: Json }> }>;
}

/** Walks the schemas of every operation (parameters, request body, responses) with their hints. */
function eachOperationSchema(paths: Record<string, Record<string, Operation>>, visit: Visit): void {
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(operations)) {
      if (!isObject(op as unknown as Json)) continue;
      const base = pascal(op.operationId ?? `${method} ${path}`);
      for (const parameter of op.parameters ?? []) {
        if (parameter.schema)
          [parameter.schema] = eachSchema(parameter.schema, `${base}${pascal(parameter.name)}`, visit);
      }
      for (const media of Object.values(op.requestBody?.content ?? {})) {
        if (media.schema) [media.schema] = eachSchema(media.schema, `${base}Body`, visit);
      }
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const hint = Number(status) >= 400 ? 'Error' : `${base}Response`;
        for (const media of Object.values(response.content ?? {})) {
          if (media.schema) [media.schema] = eachSchema(media.schema, hint, visit);
        }
      }
    }
  }
}

export function hoistComponentSchemas<T extends object>(document: T): T {
  const doc = structuredClone(document) as unknown as {
    paths?: Record<string, Record<string, Operation>>;
    components?: { schemas?: Record<string, Json> };
  };
  if (!doc.paths) return document;

  // First pass: how often each schema occurs, nested ones included.
  const counts = new Map<string, number>();
  eachOperationSchema(structuredClone(doc.paths), (schema, _hint, key) => {
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return schema;
  });

  // Second pass, innermost first: replace each shared or titled schema with a reference to its component.
  doc.components ??= {};
  const schemas = (doc.components.schemas ??= {});
  const nameOf = new Map<string, string>();
  const taken = new Set(Object.keys(schemas));
  eachOperationSchema(doc.paths, (schema, hint, key) => {
    const shared = (counts.get(key) ?? 0) > 1 && key.length >= MIN_SHARED_LENGTH;
    if (!shared && typeof schema.title !== 'string') return schema;
    let name = nameOf.get(key);
    if (!name) {
      const wanted = typeof schema.title === 'string' ? pascal(schema.title) : hint;
      name = wanted;
      for (let n = 2; taken.has(name); n++) name = `${wanted}${n}`;
      taken.add(name);
      nameOf.set(key, name);
      schemas[name] = schema;
    }
    return { $ref: `#/components/schemas/${name}` };
  });
  hoistResponsesAndParameters(doc as unknown as HoistTarget);
  return doc as unknown as T;
}

interface HoistTarget {
  paths: Record<string, Record<string, { parameters?: Json[]; responses?: Record<string, Json> }>>;
  components: { responses?: Record<string, Json>; parameters?: Record<string, Json> };
}

/**
 * Responses and parameters that operations repeat word for word (the error response of every status, the
 * organization header) become `components.responses` and `components.parameters`, referenced by `$ref`.
 */
function hoistResponsesAndParameters(doc: HoistTarget): void {
  const responseCounts = new Map<string, number>();
  const parameterCounts = new Map<string, number>();
  const operations = Object.values(doc.paths).flatMap((ops) => Object.values(ops).filter((op) => isObject(op as Json)));
  for (const op of operations) {
    for (const response of Object.values(op.responses ?? {})) {
      const key = canonical(response);
      responseCounts.set(key, (responseCounts.get(key) ?? 0) + 1);
    }
    for (const parameter of op.parameters ?? []) {
      const key = canonical(parameter);
      parameterCounts.set(key, (parameterCounts.get(key) ?? 0) + 1);
    }
  }
  const responses = (doc.components.responses ??= {});
  const parameters = (doc.components.parameters ??= {});
  const responseNames = new Map<string, string>();
  const parameterNames = new Map<string, string>();
  const unique = (taken: Record<string, Json>, wanted: string) => {
    let name = wanted;
    for (let n = 2; name in taken; n++) name = `${wanted}${n}`;
    return name;
  };
  for (const op of operations) {
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      const key = canonical(response);
      if ((responseCounts.get(key) ?? 0) < 2 || !op.responses) continue;
      let name = responseNames.get(key);
      if (!name) {
        const schemaRef = /"\$ref":"#\/components\/schemas\/([^"]+)"/.exec(key)?.[1];
        // A response that carries headers is named after them too (ErrorRetryAfter), apart from the plain one.
        const headers = Object.keys((response as { headers?: Record<string, unknown> }).headers ?? {}).map(pascal);
        name = unique(responses, schemaRef ? `${schemaRef}${headers.join('')}` : `Response${status}`);
        responseNames.set(key, name);
        responses[name] = response;
      }
      op.responses[status] = { $ref: `#/components/responses/${name}` };
    }
    op.parameters = op.parameters?.map((parameter) => {
      const key = canonical(parameter);
      if ((parameterCounts.get(key) ?? 0) < 2 || !isObject(parameter)) return parameter;
      let name = parameterNames.get(key);
      if (!name) {
        name = unique(parameters, pascal(`${String(parameter.in)} ${String(parameter.name)}`));
        parameterNames.set(key, name);
        parameters[name] = parameter;
      }
      return { $ref: `#/components/parameters/${name}` };
    });
  }
}
