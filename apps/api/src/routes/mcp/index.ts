import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type ErrorCode, isUuid } from '@firm/core';
import { agentClientOf, appendAuditEvent, SKILLS, type Skill } from '@firm/gateway';
import type { Credential } from '@firm/identity';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ERROR_TABLE } from '../../errors/catalogue';
import { ErrorResponse, sendError } from '../../errors/responses';
import { limitRefusal } from '../../plugins/rate-limit';
import { storableOrNull } from '../../text';
import { type Json, operationsOf } from '../../openapi-operations';
import { MCP_PATH, MCP_RESOURCE_METADATA_PATH, publicOrigin, tokenFitsPath } from '../../origin';
import { VERSION } from '../../version';
import { nextStepOf, type ProposalAnswer } from './next-step';
import { argumentOf, type Tool, TOOL_SPECS, type ToolSpec, toolOf } from './tools';

/**
 * The SDK, loaded on the first MCP request: a process that never serves one (most API instances, the worker, the
 * CLI) does not carry it.
 */
const loadSdk = async () => {
  const [server, transport, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return { ...server, ...transport, ...types };
};
type Sdk = Awaited<ReturnType<typeof loadSdk>>;
let sdkLoading: Promise<Sdk> | null = null;

/** Whether the tool's route writes its own agent audit event. */
const recordsItself = (spec: ToolSpec) =>
  spec.path.startsWith('/agent/v1/acct/clients') ||
  spec.path.startsWith('/agent/v1/proposals/') ||
  spec.path === '/agent/v1/skills/client-health-scan';

const INSTRUCTIONS =
  "Tools for a firm's client books. Start with list_clients (each client's id is the clientId of the other tools) " +
  'or health_scan. Every write tool takes an idempotencyKey (retries with the same key never write twice; each new ' +
  'write, on another record too, needs a new key) and a ' +
  'dryRun flag; read a record before changing it and pass its SyncToken. A write the firm holds for approval is not ' +
  'written: the tool answers its pending proposal and `next`, and proposal_status follows it. The skills (resources ' +
  'and prompts) are step-by-step recipes; audit_events shows what was done.';

/**
 * The record a partner-API tool call acts on, for the audit trail as the gateway records its own: the `id` of the
 * path (a bank transaction), else the entry a posting receipt names.
 */
function entityIdOf(args: Json, answer: unknown): string | null {
  if (typeof args.id === 'string') return storableOrNull(args.id);
  const posted = (answer as { journalEntryId?: unknown } | null)?.journalEntryId;
  return typeof posted === 'string' ? posted : null;
}

interface ToolError {
  code: string;
  message: string;
  details?: unknown;
}

const toolError = (error: ToolError): CallToolResult => ({
  isError: true,
  // No structuredContent: a client checks it against the tool's output schema, which describes success.
  content: [{ type: 'text', text: JSON.stringify({ error }) }],
});

/** The MCP challenge (RFC 9728 5.1): it names the MCP endpoint's own protected-resource metadata. */
const mcpChallenge = (request: FastifyRequest, error?: string) =>
  `Bearer resource_metadata="${publicOrigin(request)}${MCP_RESOURCE_METADATA_PATH}"${error ? `, error="${error}"` : ''}`;

const JsonRpcMessage = Type.Object(
  { jsonrpc: Type.Literal('2.0'), method: Type.Optional(Type.String()), id: Type.Optional(Type.Unknown()) },
  { additionalProperties: true, description: 'A JSON-RPC 2.0 message of the Model Context Protocol.' },
);
const JsonRpcError = Type.Object(
  {
    jsonrpc: Type.Literal('2.0'),
    error: Type.Object({ code: Type.Integer(), message: Type.String() }, { additionalProperties: true }),
    id: Type.Unknown(),
  },
  { description: 'A JSON-RPC error from the MCP transport.' },
);

/** The tools, built once from the OpenAPI document (which exists once the app is ready). */
function toolsOf(app: FastifyInstance): Map<string, Tool> {
  const operations = operationsOf(app.swagger() as unknown as Json);
  const tools = new Map<string, Tool>();
  for (const spec of TOOL_SPECS) {
    const operation = operations.find((o) => o.method === spec.method && o.path === spec.path);
    if (!operation) throw new Error(`MCP tool ${spec.name}: no operation ${spec.method} ${spec.path}`);
    tools.set(spec.name, toolOf(spec, operation));
  }
  return tools;
}

function skillPrompt(skill: Skill, clientId: string | undefined): string {
  const steps = skill.steps.map(
    (s, i) =>
      `${i + 1}. ${s.title}\n${s.calls.map((c) => `   - ${c.method} /agent/v1${c.path}${c.note ? ` (${c.note})` : ''}`).join('\n')}\n   Check: ${s.check}`,
  );
  return [
    `Follow the skill "${skill.title}" (${skill.id} ${skill.version})${clientId ? ` for the client ${clientId}` : ''}.`,
    skill.summary,
    `Scopes: ${skill.requiredScopes.join(', ')}. ${skill.writes ? 'It writes: use an idempotencyKey on every write and try it with dryRun first. A write answered with a pending proposal is not written yet: follow its `next` and check it with proposal_status.' : 'It only reads.'}`,
    'Steps (each call is also a tool of this server):',
    ...steps,
    `Done when: ${skill.checks.join(' ')}`,
  ].join('\n');
}

/**
 * The MCP endpoint (Streamable HTTP, stateless: every POST is answered on its own, nothing is kept between requests,
 * so any API instance answers any call). Its tools are operations of this service run with the caller's own
 * credential; its resources and prompts are the gateway's skills.
 */
export const mcpRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  let tools: Map<string, Tool> | null = null;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const validators = new Map<string, ValidateFunction>();
  const validatorOf = (tool: Tool) => {
    let validate = validators.get(tool.spec.name);
    if (!validate) {
      validate = ajv.compile(tool.inputSchema);
      validators.set(tool.spec.name, validate);
    }
    return validate;
  };

  /** Runs one HTTP operation of this service as the caller. */
  const call = async (
    request: FastifyRequest,
    method: string,
    url: string,
    extra: Record<string, string> = {},
    body?: unknown,
  ) => {
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers: {
        authorization: request.headers.authorization ?? '',
        // The caller's host, so links in the answer (attachments' download links) name the service as it reached it.
        ...(request.headers.host ? { host: request.headers.host } : {}),
        ...app.mcpCallHeaders,
        ...extra,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    let json: unknown = null;
    try {
      json = res.body ? JSON.parse(res.body) : null;
    } catch {
      json = null;
    }
    return { status: res.statusCode, json };
  };

  const errorOf = (json: unknown, status: number): ToolError =>
    (json as { error?: ToolError } | null)?.error ?? { code: 'INTERNAL_ERROR', message: `HTTP ${status}` };

  async function runTool(
    request: FastifyRequest,
    credential: Credential,
    tool: Tool,
    args: Json,
  ): Promise<CallToolResult> {
    const validate = validatorOf(tool);
    if (!validate(args)) {
      return toolError({
        code: 'VALIDATION_ERROR',
        message: 'the arguments failed validation',
        details: (validate.errors ?? []).map((e) => ({
          field: `arguments${e.instancePath.replace(/\//g, '.')}`,
          message: e.message ?? 'is invalid',
        })),
      });
    }
    const { spec, operation } = tool;
    const pathArgs = operation.params.filter((p) => p.in === 'path');
    const queryArgs = operation.params.filter((p) => p.in === 'query');
    const path = spec.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
      encodeURIComponent(String(args[argumentOf(spec, name)])),
    );
    const query = new URLSearchParams();
    for (const p of queryArgs) if (args[p.name] !== undefined) query.set(p.name, String(args[p.name]));
    const url = query.size > 0 ? `${path}?${query}` : path;
    const headers: Record<string, string> = {};
    if (typeof args.idempotencyKey === 'string') headers['idempotency-key'] = args.idempotencyKey;
    const clientId = spec.clientHeader
      ? String(args.clientId)
      : pathArgs.some((p) => p.name === 'clientId')
        ? String(args.clientId)
        : null;
    if (spec.clientHeader && clientId) headers['x-organization-id'] = clientId;
    const dryRun = args.dryRun === true && !tool.nativeDryRun;

    // Partner routes know nothing of agentAccess nor of the agents' limits: the client must be open to agents here,
    // for writing if it writes, and the call spends the credential's write budget (dry runs included) or read limit
    // in the gateway's own limiter, after the same checks as on the gateway and before anything is written.
    if (spec.clientHeader && clientId) {
      const client = isUuid(clientId) ? await agentClientOf(db(), credential.firmId, { id: clientId, name: '' }) : null;
      const visible =
        client &&
        client.agentAccess !== 'none' &&
        (credential.organizationIds === null || credential.organizationIds.includes(clientId));
      let refusal: (ToolError & { code: ErrorCode }) | null = !visible
        ? { code: 'CLIENT_NOT_FOUND', message: 'client not found' }
        : spec.kind !== 'read' && client.agentAccess !== 'read_write'
          ? {
              code: 'CLIENT_READ_ONLY',
              message: 'the firm opened this client to agents for reading only; writes are refused',
            }
          : operation.scope && !credential.scopes.has(operation.scope as never)
            ? { code: 'INSUFFICIENT_SCOPE', message: `this credential lacks the scope ${operation.scope}` }
            : null;
      if (!refusal) {
        const limited = limitRefusal(await app.agentLimits.spend(request, spec.kind === 'read' ? 'read' : 'write'));
        if (limited) refusal = { code: limited.code, message: limited.message };
      }
      if (refusal || dryRun) {
        await audit(request, credential, {
          tool: spec,
          clientId: visible ? clientId : null,
          status: refusal ? ERROR_TABLE[refusal.code].status : 200,
          errorCode: refusal?.code ?? null,
          dryRun,
          entityId: entityIdOf(args, null),
        });
        if (refusal) return toolError(refusal);
        const answer = { dryRun: true as const, wouldCall: { method: spec.method, path: url, body: args.body } };
        return { content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer };
      }
    }

    const res = await call(request, spec.method, url, headers, args.body);
    // The gateway's routes on clients (and its health scan) record themselves in its audit trail; every other tool
    // call (partner routes, coverage, limits, the trail itself) is recorded here.
    if (!recordsItself(spec)) {
      const code = res.status >= 400 ? errorOf(res.json, res.status).code : null;
      await audit(request, credential, {
        tool: spec,
        clientId,
        status: res.status,
        errorCode: code,
        dryRun: false,
        entityId: entityIdOf(args, res.status < 400 ? res.json : null),
      });
    }
    if (res.status >= 400) return toolError(errorOf(res.json, res.status));
    // A held write (202) is no success of the write: its answer carries the proposal and says what happens next.
    const answer = tool.proposalStatuses.includes(res.status)
      ? {
          ...(res.json as { data: ProposalAnswer }),
          next: nextStepOf((res.json as { data: ProposalAnswer }).data, spec.kind === 'read' ? 'status' : 'write'),
        }
      : res.json;
    const structured = answer && typeof answer === 'object' && !Array.isArray(answer) ? (answer as Json) : undefined;
    return {
      content: [{ type: 'text', text: JSON.stringify(answer) }],
      ...(structured && tool.outputSchema ? { structuredContent: structured } : {}),
    };
  }

  async function audit(
    request: FastifyRequest,
    credential: Credential,
    call: {
      tool: ToolSpec;
      clientId: string | null;
      status: number;
      errorCode: string | null;
      dryRun: boolean;
      entityId: string | null;
    },
  ) {
    const { clientId, status, errorCode, dryRun } = call;
    await appendAuditEvent(db(), app.auditTrail, {
      firmId: credential.firmId,
      organizationId: clientId,
      actorKind: credential.kind,
      actorId: credential.id,
      actorName: null,
      operation: `mcp.${call.tool.name}`,
      entityType: call.tool.entity ?? null,
      entityId: call.tool.entity ? call.entityId : null,
      outcome: status < 400 ? 'succeeded' : status < 500 ? 'refused' : 'failed',
      statusCode: status,
      errorCode,
      requestId: request.id,
      dryRun,
      syncTokenBefore: null,
      syncTokenAfter: null,
    });
  }

  function serverFor(sdk: Sdk, request: FastifyRequest, credential: Credential): Server {
    const {
      CallToolRequestSchema,
      ErrorCode,
      GetPromptRequestSchema,
      ListPromptsRequestSchema,
      ListResourcesRequestSchema,
      ListToolsRequestSchema,
      McpError,
      ReadResourceRequestSchema,
    } = sdk;
    tools ??= toolsOf(app);
    const all = tools;
    const server = new sdk.Server(
      { name: 'firm-accounting', title: 'Firm accounting', version: VERSION },
      { capabilities: { tools: {}, resources: {}, prompts: {} }, instructions: INSTRUCTIONS },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [...all.values()].map((t) => ({
        name: t.spec.name,
        title: t.spec.title,
        description: t.description,
        inputSchema: t.inputSchema as { type: 'object' },
        ...(t.outputSchema ? { outputSchema: t.outputSchema as { type: 'object' } } : {}),
        annotations: {
          title: t.spec.title,
          readOnlyHint: t.spec.kind === 'read',
          destructiveHint: t.spec.kind === 'destructive',
          idempotentHint: t.spec.kind === 'read' || t.idempotent,
          openWorldHint: false,
        },
      })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
      const tool = all.get(params.name);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `no tool ${params.name}; tools/list names them`);
      try {
        return await runTool(request, credential, tool, (params.arguments ?? {}) as Json);
      } catch (err) {
        request.log.error({ err, tool: params.name }, 'MCP tool failed');
        return toolError({ code: 'INTERNAL_ERROR', message: 'the tool failed; try again' });
      }
    });

    const skillUri = (id: string) => `skill://${id}`;
    server.setRequestHandler(ListResourcesRequestSchema, async () => ({
      resources: [
        ...SKILLS.map((s) => ({
          uri: skillUri(s.id),
          name: s.id,
          title: s.title,
          description: s.summary,
          mimeType: 'application/json',
        })),
        {
          uri: 'skill://recipes',
          name: 'recipes',
          title: 'The recipe bundle',
          description: 'Every skill with its steps, calls and checks, in one document.',
          mimeType: 'application/json',
        },
      ],
    }));
    /** The recipe bundle, read as the caller (it needs the scope it needs on HTTP); one skill of it by id. */
    const bundle = async (): Promise<{ version: string; skills: Skill[] }> => {
      const res = await call(request, 'GET', '/agent/v1/recipes');
      if (res.status >= 400) {
        const error = errorOf(res.json, res.status);
        throw new McpError(ErrorCode.InvalidRequest, `${error.code}: ${error.message}`);
      }
      return (res.json as { data: { version: string; skills: Skill[] } }).data;
    };
    const skillOf = async (id: string): Promise<Skill> => {
      const skill = (await bundle()).skills.find((s) => s.id === id);
      if (!skill) throw new McpError(ErrorCode.InvalidParams, `NOT_FOUND: no skill ${id}`);
      return skill;
    };
    server.setRequestHandler(ReadResourceRequestSchema, async ({ params }) => {
      const id = params.uri.startsWith('skill://') ? params.uri.slice('skill://'.length) : null;
      if (!id) throw new McpError(ErrorCode.InvalidParams, `no resource ${params.uri}`);
      const data = id === 'recipes' ? await bundle() : await skillOf(id);
      return { contents: [{ uri: params.uri, mimeType: 'application/json', text: JSON.stringify(data, null, 2) }] };
    });

    server.setRequestHandler(ListPromptsRequestSchema, async () => ({
      prompts: SKILLS.map((s) => ({
        name: s.id,
        title: s.title,
        description: s.summary,
        arguments: [
          { name: 'clientId', description: 'The client to work on (list_clients names them).', required: false },
        ],
      })),
    }));
    server.setRequestHandler(GetPromptRequestSchema, async ({ params }) => {
      const skill = await skillOf(params.name);
      return {
        description: skill.summary,
        messages: [{ role: 'user', content: { type: 'text', text: skillPrompt(skill, params.arguments?.clientId) } }],
      };
    });
    return server;
  }

  app.post(
    MCP_PATH,
    {
      // attach_file carries a file of up to 5 MB as base64; the caller is authenticated before the body is read.
      bodyLimit: Math.max(app.config.BODY_LIMIT_BYTES, 8 * 1024 * 1024),
      // Who is calling is judged before the body: a request without a valid token is 401 whatever it sends.
      onRequest: async (request, reply) => {
        const credential = await app.resolveCredential(request);
        const sentToken = /^Bearer\s+\S+/i.test(request.headers.authorization ?? '');
        if (!credential || credential.kind === 'session') {
          reply.header('www-authenticate', mcpChallenge(request, sentToken ? 'invalid_token' : undefined));
          return sendError(
            reply,
            request,
            'UNAUTHENTICATED',
            sentToken ? 'the credential is not valid' : 'send an access token as Authorization: Bearer <token>',
          );
        }
        if (credential.kind === 'oauth_token' && !tokenFitsPath(credential.resource, MCP_PATH, false)) {
          reply.header('www-authenticate', mcpChallenge(request, 'invalid_token'));
          return sendError(
            reply,
            request,
            'UNAUTHENTICATED',
            `this token was issued for another resource; ask for one with resource=${publicOrigin(request)}${MCP_PATH}`,
          );
        }
        request.credential = credential;
      },
      schema: {
        tags: ['mcp'],
        summary: 'Model Context Protocol endpoint (Streamable HTTP)',
        description:
          'JSON-RPC messages of the Model Context Protocol, answered as JSON (send `Accept: application/json, ' +
          'text/event-stream`). Stateless: no session is kept, so any instance answers any call; GET and DELETE ' +
          'answer 405. Authorization per the MCP authorization spec: an OAuth access token of this service issued ' +
          `for the resource \`<origin>${MCP_PATH}\` (RFC 8707; a token for another resource is refused), or an API ` +
          'key. Without one: 401 with `WWW-Authenticate` naming the protected-resource metadata at ' +
          `\`${MCP_RESOURCE_METADATA_PATH}\`. Tools run the operations of this API with the caller's scopes. ` +
          "Against DNS rebinding, a request whose Host is not PUBLIC_ORIGIN's host, `localhost` or an IP address, or " +
          "whose Origin (when sent) is neither the service's own nor one of ALLOWED_ORIGINS, is 403 FORBIDDEN before " +
          'anything else is judged; `Origin: null` is refused.',
        security: [{ bearerAuth: [] }],
        body: Type.Union([JsonRpcMessage, Type.Array(JsonRpcMessage)]),
        response: {
          200: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Array(Type.Unknown())], {
            description: 'JSON-RPC responses.',
          }),
          202: Type.Null({ description: 'Accepted: the message was a notification or a response.' }),
          400: Type.Union([ErrorResponse, JsonRpcError], { description: 'Malformed JSON or JSON-RPC.' }),
          401: ErrorResponse,
          403: ErrorResponse,
          406: Type.Union([JsonRpcError], { description: 'Accept must name application/json and text/event-stream.' }),
          415: Type.Union([ErrorResponse, JsonRpcError], { description: 'Send application/json.' }),
        },
      },
    },
    async (request, reply) => {
      const credential = request.credential;
      sdkLoading ??= loadSdk();
      const sdk = await sdkLoading;
      const server = serverFor(sdk, request, credential);
      const transport = new sdk.StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      reply.hijack();
      reply.raw.setHeader('x-request-id', request.id);
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await transport.handleRequest(request.raw, reply.raw, request.body);
    },
  );
};
