/** Reading the service's own OpenAPI document: its operations with every local reference resolved. */
export type Json = Record<string, unknown>;

export interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; schema: Json; required?: boolean }[];
  body: Json | null;
  bodyRequired: boolean;
  summary: string;
  description: string;
  /** The scope the route declares (`x-required-scope`), if any. */
  scope: string | null;
  /** Documented responses by status code, each with its JSON schema when it has one. */
  responses: Record<string, Json | null>;
}

/** The node with every local `$ref` replaced by what it points at. */
export function deref(doc: Json, node: unknown, seen: string[] = []): unknown {
  if (Array.isArray(node)) return node.map((n) => deref(doc, n, seen));
  if (!node || typeof node !== 'object') return node;
  const ref = (node as { $ref?: string }).$ref;
  if (ref?.startsWith('#/')) {
    if (seen.includes(ref)) return {};
    const target = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((o, k) => (o as Json)[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    return deref(doc, target, [...seen, ref]);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(doc, v, seen)]));
}

/** Every operation of an OpenAPI document, references resolved. */
export function operationsOf(doc: Json): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, raw] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const op = deref(doc, raw) as Json;
      const content = (op.requestBody as { content?: Record<string, { schema: Json }> } | undefined)?.content;
      const responses = Object.fromEntries(
        Object.entries((op.responses as Record<string, Json> | undefined) ?? {}).map(([status, r]) => [
          status,
          (r.content as Record<string, { schema?: Json }> | undefined)?.['application/json']?.schema ?? null,
        ]),
      );
      ops.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters as Operation['params'] | undefined) ?? [],
        body: content?.['application/json']?.schema ?? null,
        bodyRequired: (op.requestBody as { required?: boolean } | undefined)?.required === true,
        summary: String(op.summary ?? ''),
        description: String(op.description ?? ''),
        scope: typeof op['x-required-scope'] === 'string' ? op['x-required-scope'] : null,
        responses,
      });
    }
  }
  return ops;
}
