import { AGENT_ACCESS, CLIENT_STATUSES } from '@firm/db';
import { COVERAGE, QUERY_LIMITS, SHORTCUT_LISTS, TRANSACTION_TYPES } from '@firm/gateway';
import { Type } from 'typebox';
import { REPORT_NAMES } from '@firm/platform';
import { IdempotencyHeaders, OptionalIdempotencyHeaders } from '../../plugins/idempotency';
import { DataOf, IsoDate, ListQuery, Timestamp, Uuid } from '../../schemas';

export const AGENT_BASE = '/agent/v1';

const AnyObject = (description: string) => Type.Object({}, { additionalProperties: true, description });

const n = (value: number) => value.toLocaleString('en-US');

/** The bounds of a query, whichever door it comes in by, as the OpenAPI document (and so the MCP tools) say them. */
export const QUERY_BOUNDS =
  `At most ${n(QUERY_LIMITS.maxLength)} characters, ${QUERY_LIMITS.maxConditions} conditions and ` +
  `${n(QUERY_LIMITS.maxInValues)} values in an IN list; STARTPOSITION a whole number from 1 to ` +
  `${n(QUERY_LIMITS.maxStartPosition)}, MAXRESULTS from 1 to ${n(QUERY_LIMITS.maxResults)} (default 100); a date ` +
  "field (TxnDate, DueDate) compares with a real calendar date 'YYYY-MM-DD', a time (MetaData.*) with " +
  "'YYYY-MM-DDThh:mm:ss' and an optional Z or ±hh:mm (none: UTC) or a date. Anything else is 400 QUERY_INVALID " +
  'naming the position (details[0].offset, line, column).';

/** What happens to a read of the books that runs too long. */
export const READ_TIMEOUT =
  "A read that runs longer than the gateway's statement timeout (GATEWAY_STATEMENT_TIMEOUT_MS, 5 s unless set) is " +
  'cancelled: 422 QUERY_TIMEOUT.';

export const StatusResponse = Type.Object(
  {
    ok: Type.Boolean(),
    service: Type.String(),
    version: Type.Optional(Type.String()),
    capabilities: Type.Optional(Type.Array(Type.String())),
  },
  { title: 'AgentGatewayStatus' },
);

export const ApprovalPolicy = Type.Object(
  {
    mode: Type.Union([Type.Literal('auto'), Type.Literal('approval')], {
      description:
        '`auto`: agent writes run. `approval`: a write matching any rule below waits for a person (202 and a ' +
        'proposal); with no rule given, every agent write does.',
    }),
    entityTypes: Type.Optional(
      Type.Array(Type.String(), { description: 'Writes to these entities (`Bill`, `Vendor`; GET /acct/coverage).' }),
    ),
    operations: Type.Optional(
      Type.Array(Type.String(), { description: 'Writes of these operations: `create`, `update`, `delete` (void).' }),
    ),
    amountOverCents: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "Writes over this amount, in cents of the client's currency: the preview's total debits, else TotalAmt.",
      }),
    ),
    datesBefore: Type.Optional(IsoDate('Writes dated (TxnDate) before this day.')),
    closedPeriod: Type.Optional(Type.Boolean({ description: "Writes dated on or before the books' closing date." })),
    newContacts: Type.Optional(Type.Boolean({ description: 'Customers and vendors created.' })),
    expiresInHours: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 720, description: 'Hours a proposal waits for a decision; 168 by default.' }),
    ),
  },
  { additionalProperties: false, title: 'ApprovalPolicy' },
);

export const ApprovalPolicySource = Type.Union(
  [Type.Literal('agent'), Type.Literal('client'), Type.Literal('firm'), Type.Literal('default')],
  { description: 'Where the policy in force comes from; `default`: none set, the shipped `auto`.' },
);

export const Client = Type.Object(
  {
    id: Uuid('The organization id.'),
    name: Type.String(),
    acctCompanyId: Type.String({ description: "The company id on the accounting platform (QBO's realm id)." }),
    platform: Type.Union([Type.Literal('embedded'), Type.Literal('qbo')], {
      description: '`embedded`: these books; `qbo`: a QuickBooks Online company.',
    }),
    status: Type.Enum(CLIENT_STATUSES, {
      description:
        '`connected`: calls reach the platform. `needs_reauth`: the platform refused our credentials; a firm ' +
        'owner or admin must connect it again. `disconnected`: the firm disconnected it. `error`: the last ' +
        'calls failed on the platform side. Embedded clients are always `connected`.',
    }),
    lastSyncAt: Type.Union([Timestamp(), Type.Null()], {
      description: 'The last successful call to the platform; null on the embedded platform, which is always current.',
    }),
    agentAccess: Type.Enum(AGENT_ACCESS, {
      description:
        '`none`: invisible to agents (404). `read`: agents read; every write is 403 CLIENT_READ_ONLY. ' +
        '`read_write`: agents read and write within their scopes. New clients start at `none`.',
    }),
    approvalPolicy: Type.Optional(
      Type.Object(
        { policy: ApprovalPolicy, source: ApprovalPolicySource },
        { description: 'The approval policy in force for agents writing to this client (one client only).' },
      ),
    ),
  },
  { title: 'AcctClient' },
);

export const ClientParams = Type.Object({ clientId: Type.String({ description: 'A client id (its `id`).' }) });
export const ApprovalPolicyResponse = DataOf(
  Type.Object(
    {
      policy: ApprovalPolicy,
      source: ApprovalPolicySource,
      firm: Type.Union([ApprovalPolicy, Type.Null()], { description: "The firm's own default; null: none set." }),
    },
    { title: 'AgentApprovalPolicy' },
  ),
);

export const ClientPatch = Type.Object(
  {
    agentAccess: Type.Optional(Type.Enum(AGENT_ACCESS)),
    approvalPolicy: Type.Optional(
      Type.Union([ApprovalPolicy, Type.Null()], {
        description: "The client's own approval policy; null: the firm's default applies again.",
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1, title: 'AcctClientPatch' },
);

const JournalLine = Type.Object({
  accountId: Type.String(),
  debit: Type.Number(),
  credit: Type.Number(),
  description: Type.Union([Type.String(), Type.Null()]),
});

export const Proposal = Type.Object(
  {
    id: Uuid(),
    clientId: Uuid(),
    status: Type.Union(
      [
        Type.Literal('pending'),
        Type.Literal('approved'),
        Type.Literal('rejected'),
        Type.Literal('executed'),
        Type.Literal('failed'),
        Type.Literal('expired'),
      ],
      {
        description:
          '`pending` waits for a person; `approved` is running; `executed` ran (`result`); `failed` could not run ' +
          '(`failure`, nothing written); `rejected`; `expired` (no decision before `expiresAt`).',
      },
    ),
    agent: Type.Object({
      kind: Type.String({ description: '`api_key` or `oauth_token`.' }),
      id: Type.String({ description: 'The API key id, or the OAuth grant id.' }),
      clientId: Type.String({ description: 'The agent: the OAuth client id, or the API key id.' }),
    }),
    entity: Type.String(),
    transactionType: Type.Union([Type.String(), Type.Null()]),
    operation: Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('delete')]),
    targetId: Type.Union([Type.String(), Type.Null()]),
    request: Type.Object({
      method: Type.String(),
      path: Type.String(),
      body: Type.Unknown(),
      idempotencyKey: Type.Union([Type.String(), Type.Null()]),
    }),
    reason: Type.Union([Type.String(), Type.Null()], { description: "The agent's X-Agent-Reason." }),
    rules: Type.Array(Type.String(), { description: 'Why the policy held the write.' }),
    preview: Type.Object({
      journal: Type.Array(JournalLine, { description: 'The journal lines the write would post.' }),
      record: AnyObject('The record as the write would leave it.'),
      syncToken: Type.Union([Type.String(), Type.Null()], {
        description: 'The SyncToken the record had when proposed (update, delete); approval re-checks it.',
      }),
      period: Type.Object({
        closedThrough: Type.Union([IsoDate(), Type.Null()]),
        status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
      }),
    }),
    decision: Type.Union([
      Type.Object({
        by: Type.Object({ kind: Type.String(), id: Type.String() }),
        note: Type.Union([Type.String(), Type.Null()]),
        at: Timestamp(),
      }),
      Type.Null(),
    ]),
    result: Type.Union([Type.Object({ status: Type.Integer(), body: Type.Unknown() }), Type.Null()], {
      description: "The executed write's response, as the agent's retry with its Idempotency-Key gets it.",
    }),
    failure: Type.Union([Type.Object({ code: Type.String(), reason: Type.String() }), Type.Null()]),
    expiresAt: Timestamp(),
    createdAt: Timestamp(),
    executedAt: Type.Union([Timestamp(), Type.Null()]),
    links: Type.Object({ self: Type.String(), approve: Type.String(), reject: Type.String() }),
  },
  { title: 'AgentProposal' },
);

export const ProposalOne = DataOf(Proposal);

export const ProposalParams = Type.Object({ id: Type.String({ description: 'A proposal id.' }) });

/** The header an agent states its reason for a write in, shown to the approver when the write is held. */
export const AGENT_REASON_HEADER = 'x-agent-reason';

const LimitValue = Type.Integer({ minimum: 1, maximum: 1_000_000 });

export const AgentLimitsBody = Type.Object(
  {
    writeBudget: Type.Optional(
      Type.Union([LimitValue, Type.Null()], {
        description: 'Writes per credential per AGENT_WRITE_WINDOW_SECONDS, dry runs included; null: the default.',
      }),
    ),
    readLimit: Type.Optional(
      Type.Union([LimitValue, Type.Null()], { description: 'Reads per credential per minute; null: the default.' }),
    ),
  },
  { additionalProperties: false, minProperties: 1, title: 'AgentLimitsPatch' },
);

export const AgentLimitsResponse = Type.Object(
  {
    data: Type.Object(
      {
        writeBudget: Type.Integer({ description: 'In force: the firm’s own, else the default.' }),
        writeWindowSeconds: Type.Integer(),
        readLimit: Type.Integer({ description: 'Reads per minute in force: the firm’s own, else the default.' }),
        readWindowSeconds: Type.Integer(),
        firm: Type.Object({
          writeBudget: Type.Union([Type.Integer(), Type.Null()]),
          readLimit: Type.Union([Type.Integer(), Type.Null()]),
        }),
      },
      { title: 'AgentLimits' },
    ),
  },
  { title: 'AgentLimitsResponse' },
);

export const CoverageEntry = Type.Object(
  {
    entity: Type.String(),
    path: Type.String({ description: "The entity's path segment in the platform's v3 API." }),
    transactionType: Type.Union([Type.Enum(TRANSACTION_TYPES), Type.Null()]),
    shortcut: Type.Union([Type.Enum(SHORTCUT_LISTS), Type.Null()]),
    operations: Type.Array(Type.String()),
    scopes: Type.Record(Type.String(), Type.String(), { description: 'The scope each operation needs.' }),
  },
  { title: 'CoverageEntry' },
);

const entityNames = COVERAGE.map((e) => e.entity).join(', ');

/**
 * A record's id on its platform: a UUID here, digits on QuickBooks Online. Letters, digits, `-` and `_` only, so an id
 * can never be a path of its own (`..`, `a/b`) wherever it is put into one.
 */
const RecordId = (description: string) =>
  Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$', description });

export const EntityParams = Type.Object({
  clientId: Type.String(),
  entity: Type.String({
    description: `The platform's entity name, in any case: ${entityNames}. See GET /acct/coverage.`,
  }),
});
export const EntityIdParams = Type.Object({
  ...EntityParams.properties,
  id: RecordId("The record's `Id`."),
});

export const Paging = {
  maxResults: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1-1000 (default 100).' }),
  ),
  startPosition: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: QUERY_LIMITS.maxStartPosition,
      default: 1,
      description: `The 1-based position of the first record, up to ${n(QUERY_LIMITS.maxStartPosition)} (default 1).`,
    }),
  ),
};
export const PagingQuery = Type.Object(Paging);

export const DryRun = {
  dryRun: Type.Optional(
    Type.Boolean({
      description: 'true: validate and show the record and its journal effect, then write nothing (200).',
    }),
  ),
};

export const Record_ = AnyObject("A record in the platform's shape: Id, SyncToken, MetaData, and its own fields.");
export const RecordOne = DataOf(Record_);

export const QueryResponse = DataOf(
  Type.Object(
    {
      QueryResponse: AnyObject(
        "The platform's QueryResponse: the records under the entity's name, startPosition, maxResults, totalCount.",
      ),
    },
    { additionalProperties: true },
  ),
);

export const EntityPayload = AnyObject("The platform's payload for the entity (QBO v3 JSON).");

export const EntityDeleteQuery = Type.Object({
  SyncToken: Type.Optional(Type.String({ maxLength: 20, description: "The record's SyncToken (or in the body)." })),
  ...DryRun,
});
export const EntityDeleteBody = Type.Union(
  [Type.Object({ SyncToken: Type.String({ maxLength: 20 }) }, { additionalProperties: true }), Type.Null()],
  { description: "The record's SyncToken, here or in the query string." },
);

export const TransactionType = Type.Enum(TRANSACTION_TYPES, { description: 'A transaction entity type.' });

export const TransactionListQuery = Type.Object({
  entityType: Type.Optional({ ...TransactionType, default: 'purchase' }),
  ...Paging,
});
export const TransactionGetQuery = Type.Object({
  entityType: Type.Optional({ ...TransactionType, default: 'purchase' }),
});
export const TransactionParams = Type.Object({
  clientId: Type.String(),
  transactionId: RecordId("The transaction's `Id`."),
});

export const TransactionWrite = Type.Object(
  {
    entityType: TransactionType,
    payload: Type.Optional(EntityPayload),
    syncToken: Type.Optional(Type.String({ maxLength: 20, description: 'Required for delete.' })),
  },
  { additionalProperties: false, title: 'TransactionWriteRequest' },
);
export const TransactionDelete = Type.Object(
  {
    entityType: TransactionType,
    payload: Type.Optional(EntityPayload),
    syncToken: Type.String({ minLength: 1, maxLength: 20, description: "The record's current SyncToken." }),
  },
  { additionalProperties: false, title: 'TransactionDeleteRequest' },
);
export const WriteQuery = Type.Object(DryRun);

export const TransactionWriteResponse = DataOf(
  Type.Object(
    {
      clientId: Type.String(),
      acctCompanyId: Type.String(),
      entityType: Type.String(),
      transactionId: Type.Optional(Type.String()),
      operation: Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('delete')]),
      source: Type.Literal('acct'),
      postedAt: Timestamp(),
      data: Record_,
      dryRun: Type.Optional(Type.Boolean({ description: 'Present and true when nothing was written.' })),
      journal: Type.Optional(
        Type.Array(
          Type.Object({
            accountId: Type.String(),
            debit: Type.Number(),
            credit: Type.Number(),
            description: Type.Union([Type.String(), Type.Null()]),
          }),
          { description: 'The journal lines the write posted (or, on a dry run, would post).' },
        ),
      ),
      bankTransactionIds: Type.Optional(
        Type.Array(Type.String(), {
          description:
            'A payment through a bank or card account that holds a register (Payment, BillPayment): its row in that ' +
            'register, matched to it, as the partner API answers.',
        }),
      ),
    },
    { title: 'TransactionWriteResponse' },
  ),
);

export const ShortcutParams = Type.Object({
  clientId: Type.String(),
  entity: Type.Enum(SHORTCUT_LISTS, { description: 'chart-accounts, vendors or customers.' }),
});

export const AuditEvent = Type.Object(
  {
    id: Uuid(),
    seq: Type.Integer({ description: "The event's place in the firm's chain, from 1." }),
    clientId: Type.Union([Uuid(), Type.Null()]),
    actor: Type.Object({
      kind: Type.String({ description: 'oauth_token, api_key or session.' }),
      id: Type.String(),
      name: Type.Union([Type.String(), Type.Null()], { description: 'The OAuth client or API key name.' }),
    }),
    operation: Type.String({ description: 'e.g. clients.list, entities.read, transactions.create.' }),
    entityType: Type.Union([Type.String(), Type.Null()]),
    entityId: Type.Union([Type.String(), Type.Null()]),
    outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('refused'), Type.Literal('failed')]),
    statusCode: Type.Integer(),
    errorCode: Type.Union([Type.String(), Type.Null()]),
    requestId: Type.Union([Type.String(), Type.Null()]),
    dryRun: Type.Boolean(),
    syncTokenBefore: Type.Union([Type.String(), Type.Null()]),
    syncTokenAfter: Type.Union([Type.String(), Type.Null()]),
    note: Type.Union([Type.String(), Type.Null()], {
      description: "A person's note, hashed with the event: an approver's note on a proposal's approval or rejection.",
    }),
    createdAt: Timestamp(),
    prevHash: Type.String({ description: "The hash of the firm's previous event (64 zeros for the first)." }),
    hash: Type.String({
      description:
        'With a keyId: HMAC-SHA256 under that audit key over the fields of this event and prevHash, so only this ' +
        'service can write it. Without one (events written before the chain was keyed): SHA-256 over the same.',
    }),
    keyId: Type.Union([Type.String(), Type.Null()], {
      description: 'The audit key the hash was made with; null for events written before the chain was keyed.',
    }),
  },
  { title: 'AgentAuditEvent' },
);

export const AuditQuery = Type.Object({
  ...ListQuery,
  clientId: Type.Optional(Uuid('Only this client.')),
  operation: Type.Optional(Type.String({ maxLength: 100 })),
  outcome: Type.Optional(Type.Union([Type.Literal('succeeded'), Type.Literal('refused'), Type.Literal('failed')])),
  since: Type.Optional(Type.String({ format: 'date-time' })),
  until: Type.Optional(Type.String({ format: 'date-time' })),
});

export const QueryBody = Type.Object(
  {
    // No maxLength here: the query's own bound is checked where every door's query is parsed, and refused there
    // as QUERY_INVALID with its position, like any other problem of its text.
    query: Type.String({
      minLength: 1,
      description:
        "The platform's query language: SELECT * | COUNT(*) | fields FROM Entity [WHERE a = 'x' AND b > 10 AND " +
        `c IN (...) AND d LIKE 'x%'] [ORDERBY f DESC] [STARTPOSITION n] [MAXRESULTS m]. ${QUERY_BOUNDS}`,
    }),
  },
  { additionalProperties: false },
);

export const ReportParams = Type.Object({
  clientId: Type.String(),
  reportName: Type.Enum(REPORT_NAMES, { description: 'profit-loss, balance-sheet, trial-balance or general-ledger.' }),
});
export const ReportQuery = Type.Object({
  start_date: Type.Optional(IsoDate("Start of the period (the platform's name; startDate also works).")),
  end_date: Type.Optional(
    IsoDate("End of the period, or the balance sheet's date (default today; endDate also works)."),
  ),
  startDate: Type.Optional(IsoDate('As start_date.')),
  endDate: Type.Optional(IsoDate('As end_date.')),
  accountId: Type.Optional(Uuid('General ledger: this account only.')),
});
export const ReportResponse = DataOf(
  Type.Object({}, { additionalProperties: true, description: "The platform's report JSON: Header, Columns, Rows." }),
);

export const PassThroughBody = Type.Object(
  {
    method: Type.Optional(
      Type.Union(
        [Type.Literal('GET'), Type.Literal('PUT'), Type.Literal('POST'), Type.Literal('PATCH'), Type.Literal('DELETE')],
        {
          default: 'GET',
        },
      ),
    ),
    path: Type.String({
      minLength: 1,
      maxLength: 2000,
      description:
        "Relative to the company's v3 API root: `invoice/42`, `query`, `reports/ProfitAndLoss`, `companyinfo/<id>`, " +
        'optionally written as `/v3/company/<acctCompanyId>/...`. No URL, no `..`, no encoded slashes or dots, no ' +
        'other company.',
    }),
    query: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Query parameters of the call.' })),
    body: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Body of the call.' })),
  },
  { additionalProperties: false, title: 'PassThroughRequest' },
);
export const PassThroughResponse = DataOf(
  Type.Object({}, { additionalProperties: true, description: "The platform's response body." }),
);

export const Skill = Type.Object(
  {},
  {
    additionalProperties: true,
    title: 'Skill',
    description: 'A versioned recipe: steps, the calls each makes, required scopes, checks.',
  },
);
export const SkillParams = Type.Object({ skillId: Type.String({ maxLength: 100 }) });
export const HealthScanQuery = Type.Object({ asOf: Type.Optional(IsoDate('Scan as of this date (default today).')) });
export const HealthScanResponse = DataOf(
  Type.Object(
    {
      scannedAt: Timestamp(),
      asOf: Type.String(),
      clients: Type.Integer(),
      findings: Type.Array(
        Type.Object(
          {
            clientId: Type.String(),
            clientName: Type.String(),
            code: Type.String(),
            severity: Type.Union([
              Type.Literal('high'),
              Type.Literal('medium'),
              Type.Literal('low'),
              Type.Literal('info'),
            ]),
            title: Type.String(),
            evidence: Type.Object({}, { additionalProperties: true }),
            fix: Type.Object({}, { additionalProperties: true, description: 'The gateway call that starts the fix.' }),
          },
          { title: 'HealthFinding' },
        ),
      ),
    },
    { title: 'HealthScan' },
  ),
);

const Reason = Type.Optional(
  Type.String({
    maxLength: 1000,
    description:
      "Why the agent makes this write, in a sentence: shown to the person who approves it when the firm's approval " +
      'policy holds it.',
  }),
);
export const WriteHeaders = Type.Object({ ...IdempotencyHeaders.properties, [AGENT_REASON_HEADER]: Reason });
export const OptionalWriteHeaders = Type.Object({
  ...OptionalIdempotencyHeaders.properties,
  [AGENT_REASON_HEADER]: Reason,
});

/** What a write route says about the approval policy. */
export const HELD =
  " When the firm's approval policy holds the write, nothing is written: 202 with the proposal (GET " +
  '/agent/v1/proposals/{id} follows it; the same Idempotency-Key answers it again, and once approved and run, the ' +
  "write's own response).";
