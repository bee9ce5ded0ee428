import { COVERAGE } from '@firm/gateway';
import type { PlatformOperation } from '@firm/platform';
import type { Json, Operation } from '../../openapi-operations';

/**
 * The MCP tools: each is one HTTP operation of this service, whose input and output schemas are the operation's own
 * (the TypeBox schemas of the route, as the OpenAPI document carries them). A call runs the operation itself, with the
 * caller's credential, so scopes, client access, idempotency and the gateway's audit trail are exactly as on HTTP.
 */
export interface ToolSpec {
  name: string;
  title: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The operation's path in the OpenAPI document. */
  path: string;
  /** read: changes nothing; write: creates or changes; destructive: deletes, voids or overwrites. */
  kind: 'read' | 'write' | 'destructive';
  /** Partner API routes name the client in the X-Organization-Id header: the tool takes it as `clientId`. */
  clientHeader?: boolean;
  /** Entity tools: the operation, whose covered entities (the coverage registry) the `entity` argument lists. */
  entityOperation?: PlatformOperation;
  /** Partner API tools: the kind of record they act on, as the audit trail names it. */
  entity?: string;
  /** Path parameters the tool's arguments name otherwise (a bare `id` says little), with the argument's schema. */
  argumentsFor?: Record<string, { name: string; schema: Json }>;
  /** What the tool adds to its operation's description, for an agent rather than an HTTP caller. */
  note?: string;
}

const C = '/agent/v1/acct/clients/{clientId}';

export const TOOL_SPECS: readonly ToolSpec[] = [
  { name: 'list_clients', title: 'List clients', method: 'GET', path: '/agent/v1/acct/clients', kind: 'read' },
  { name: 'get_client', title: 'Get a client', method: 'GET', path: C, kind: 'read' },
  { name: 'coverage', title: 'What the gateway covers', method: 'GET', path: '/agent/v1/acct/coverage', kind: 'read' },
  {
    name: 'health_scan',
    title: 'Health scan across clients',
    method: 'GET',
    path: '/agent/v1/skills/client-health-scan',
    kind: 'read',
  },
  {
    name: 'list_entities',
    title: 'List entities',
    method: 'GET',
    path: `${C}/entities/{entity}`,
    kind: 'read',
    entityOperation: 'read',
  },
  {
    name: 'get_entity',
    title: 'Get an entity',
    method: 'GET',
    path: `${C}/entities/{entity}/{id}`,
    kind: 'read',
    entityOperation: 'read',
  },
  {
    name: 'create_entity',
    title: 'Create an entity',
    method: 'POST',
    path: `${C}/entities/{entity}`,
    kind: 'write',
    entityOperation: 'create',
  },
  {
    name: 'update_entity',
    title: 'Update an entity',
    method: 'PATCH',
    path: `${C}/entities/{entity}/{id}`,
    kind: 'write',
    entityOperation: 'update',
  },
  {
    name: 'delete_entity',
    title: 'Delete an entity',
    method: 'DELETE',
    path: `${C}/entities/{entity}/{id}`,
    kind: 'destructive',
    entityOperation: 'delete',
  },
  { name: 'list_transactions', title: 'List transactions', method: 'GET', path: `${C}/transactions`, kind: 'read' },
  {
    name: 'get_transaction',
    title: 'Get a transaction',
    method: 'GET',
    path: `${C}/transactions/{transactionId}`,
    kind: 'read',
  },
  {
    name: 'create_transaction',
    title: 'Create a transaction',
    method: 'POST',
    path: `${C}/transactions`,
    kind: 'write',
  },
  {
    name: 'update_transaction',
    title: 'Update a transaction',
    method: 'PATCH',
    path: `${C}/transactions/{transactionId}`,
    kind: 'write',
  },
  {
    name: 'delete_transaction',
    title: 'Delete (void) a transaction',
    method: 'DELETE',
    path: `${C}/transactions/{transactionId}`,
    kind: 'destructive',
  },
  { name: 'query', title: 'Query records', method: 'POST', path: `${C}/query`, kind: 'read' },
  {
    name: 'platform_request',
    title: "Relay a call to the client's platform API",
    method: 'POST',
    path: `${C}/request`,
    kind: 'destructive',
  },
  { name: 'run_report', title: 'Run a report', method: 'GET', path: `${C}/reports/{reportName}`, kind: 'read' },
  { name: 'audit_events', title: 'What agents did', method: 'GET', path: '/agent/v1/audit-events', kind: 'read' },
  { name: 'limits', title: 'Limits for agents', method: 'GET', path: '/agent/v1/limits', kind: 'read' },
  {
    name: 'proposal_status',
    title: 'Status of a write held for approval',
    method: 'GET',
    path: '/agent/v1/proposals/{id}',
    kind: 'read',
    argumentsFor: {
      id: {
        name: 'proposalId',
        schema: { type: 'string', format: 'uuid', description: 'The id of the proposal a write tool answered.' },
      },
    },
    note:
      "A write the firm's approval policy holds is not written: the write tool answers its proposal (status " +
      '`pending`). This tool answers that proposal as it is now, with `next` saying what to do: wait (pending, ' +
      'approved), read the written record (executed), or write again with a new idempotencyKey (failed, rejected, ' +
      'expired).',
  },
  {
    name: 'post_journal_entry',
    title: 'Post a journal entry',
    method: 'POST',
    path: '/api/v1/journal-entries',
    kind: 'write',
    clientHeader: true,
    entity: 'JournalEntry',
  },
  {
    name: 'list_bank_transactions',
    title: 'List bank transactions',
    method: 'GET',
    path: '/api/v1/bank-transactions',
    kind: 'read',
    clientHeader: true,
    entity: 'BankTransaction',
  },
  {
    name: 'bank_match_candidates',
    title: 'What a bank transaction could match',
    method: 'GET',
    path: '/api/v1/bank-transactions/{id}/match-candidates',
    kind: 'read',
    clientHeader: true,
    entity: 'BankTransaction',
  },
  {
    name: 'close_status',
    title: "The firm's month-end close board",
    method: 'GET',
    path: '/agent/v1/acct/closes',
    kind: 'read',
    note: 'Each client (company) with its close of the period, its status and its open blocking and advisory items.',
  },
  {
    name: 'open_close',
    title: 'Open a month-end close',
    method: 'POST',
    path: `${C}/closes`,
    kind: 'write',
  },
  {
    name: 'list_closes',
    title: "A client's closes",
    method: 'GET',
    path: `${C}/closes`,
    kind: 'read',
  },
  {
    name: 'close_checklist',
    title: "A close's checklist",
    method: 'GET',
    path: `${C}/closes/{closeId}`,
    kind: 'read',
    note: 'Agents read and comment; only people sign items off and finish a close.',
  },
  {
    name: 'close_comment',
    title: 'Comment on a close or one of its items',
    method: 'POST',
    path: `${C}/closes/{closeId}/comments`,
    kind: 'write',
  },
  {
    name: 'list_attachments',
    title: "A record's attached files",
    method: 'GET',
    path: '/api/v1/attachments',
    kind: 'read',
    clientHeader: true,
    entity: 'Attachment',
    note: 'Give entityType and entityId for the files of one record (a bank row, an entry, a bill...): their names, types, sizes and SHA-256, and a downloadUrl to hand to a person (it works without a credential for 15 minutes).',
  },
  {
    name: 'attach_file',
    title: 'Attach a file to a record',
    method: 'POST',
    path: '/api/v1/attachments/inline',
    kind: 'write',
    clientHeader: true,
    entity: 'Attachment',
    note: 'The file as base64 (at most 5 MB): a receipt, invoice or statement (PDF, PNG, JPEG, HEIC, TIFF, CSV, XLSX). Cite its id when categorizing the bank row it proves (attachmentIds of bank_reclassify, bank_match, bank_split): it is attached to the row and what the row posts.',
  },
  ...(['reclassify', 'match', 'split', 'exclude', 'include', 'reconcile'] as const).map((action): ToolSpec => ({
    name: `bank_${action}`,
    title: `${action[0]?.toUpperCase()}${action.slice(1)} a bank transaction`,
    method: 'POST',
    path: `/api/v1/bank-transactions/{id}/${action}`,
    kind: 'write',
    clientHeader: true,
    entity: 'BankTransaction',
  })),
];

/** What a dry run of a route without one of its own answers: the call that would be made, checked, not made. */
export const DryRunAnswer = {
  type: 'object',
  properties: {
    dryRun: { const: true },
    wouldCall: {
      type: 'object',
      properties: { method: { type: 'string' }, path: { type: 'string' }, body: {} },
      required: ['method', 'path'],
    },
  },
  required: ['dryRun', 'wouldCall'],
} as const;

/** The plain-language next step an answer carrying a proposal adds: a held write's, and proposal_status's. */
const NextStep = {
  type: 'string',
  description: 'What happens next and what to do: nothing was written unless the proposal was executed.',
} as const;

/** Whether an answer's schema is `{data: AgentProposal}`: a write the approval policy held, or such a proposal read. */
const isProposalAnswer = (schema: Json) =>
  ((schema.properties as Json | undefined)?.data as Json | undefined)?.title === 'AgentProposal';

const withNextStep = (schema: Json): Json => ({
  ...schema,
  properties: { ...(schema.properties as Json), next: NextStep },
  required: [...((schema.required as string[] | undefined) ?? []), 'next'],
});

export interface Tool {
  spec: ToolSpec;
  operation: Operation;
  inputSchema: Json;
  outputSchema: Json | undefined;
  description: string;
  /** Whether the route has a dry run of its own (a `dryRun` query parameter). */
  nativeDryRun: boolean;
  /** Whether the route takes an Idempotency-Key. */
  idempotent: boolean;
  /** The statuses the route answers with a proposal, to which the tool adds `next`. */
  proposalStatuses: readonly number[];
}

/** The argument a path parameter of the tool's operation is passed as. */
export const argumentOf = (spec: ToolSpec, parameter: string): string =>
  spec.argumentsFor?.[parameter]?.name ?? parameter;

const HEADER_ARGUMENTS: Record<string, string> = {
  'idempotency-key': 'idempotencyKey',
  'x-organization-id': 'clientId',
};

/** The tool of a spec, from its operation in the OpenAPI document. */
export function toolOf(spec: ToolSpec, operation: Operation): Tool {
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  for (const p of operation.params) {
    const name = p.in === 'header' ? HEADER_ARGUMENTS[p.name.toLowerCase()] : argumentOf(spec, p.name);
    if (!name || (p.in !== 'path' && p.in !== 'query' && p.in !== 'header')) continue;
    const description = (p as { description?: string }).description;
    properties[name] = (p.in === 'path' && spec.argumentsFor?.[p.name]?.schema) || {
      ...p.schema,
      ...(description ? { description } : {}),
    };
    if (p.required || p.in === 'path') required.push(name);
  }
  if (spec.entityOperation) {
    const op = spec.entityOperation;
    const covered = COVERAGE.filter((e) => e.operations.includes(op));
    properties.entity = {
      type: 'string',
      enum: covered.map((e) => e.entity),
      description: `The entity (coverage registry): ${covered.map((e) => `${e.entity} (${e.scopes[op]})`).join(', ')}.`,
    };
  }
  const idempotent = 'idempotencyKey' in properties;
  if (spec.clientHeader) {
    properties.clientId = { type: 'string', format: 'uuid', description: 'The client (organization) to act on.' };
    if (!required.includes('clientId')) required.push('clientId');
  }
  if (operation.body) {
    properties.body = operation.body;
    if (operation.bodyRequired) required.push('body');
  }
  const nativeDryRun = operation.params.some((p) => p.in === 'query' && p.name === 'dryRun');
  if (spec.kind !== 'read' && !nativeDryRun) {
    properties.dryRun = {
      type: 'boolean',
      description: 'true: check the arguments, the scope and the client access, and write nothing.',
    };
  }
  const answers = Object.entries(operation.responses).filter(
    (answer): answer is [string, Json] =>
      answer[0].startsWith('2') && answer[1] !== null && (answer[1] as Json).type === 'object',
  );
  const proposalStatuses = answers.filter(([, schema]) => isProposalAnswer(schema)).map(([status]) => Number(status));
  // An answer that carries a proposal also says what happens next: its schema says so, as structuredContent must fit.
  const successes = answers.map(([, schema]) => (isProposalAnswer(schema) ? withNextStep(schema) : schema));
  const outputs = [...new Map(successes.map((s) => [JSON.stringify(s), s])).values()];
  if (spec.kind !== 'read' && !nativeDryRun) outputs.push(DryRunAnswer as unknown as Json);
  const outputSchema =
    outputs.length === 0 ? undefined : outputs.length === 1 ? outputs[0] : { type: 'object', anyOf: outputs };
  const scope = operation.scope ? `\n\nScope: ${operation.scope}.` : '';
  const description = [operation.summary, operation.description]
    .filter(Boolean)
    .join('. ')
    .replace(/\n\nRequires scope `[^`]+`\./, '');
  const note = spec.note ? `\n\n${spec.note}` : '';
  return {
    spec,
    operation,
    inputSchema: { type: 'object', properties, required, additionalProperties: false },
    outputSchema,
    description: `${description}${note}${scope}`,
    nativeDryRun,
    idempotent,
    proposalStatuses,
  };
}
