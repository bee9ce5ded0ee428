import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { attachmentsOf, type EntityRef, getAttachment, linkAttachment } from '@firm/attachments';
import {
  createBankAccount,
  excludeBankTransaction,
  finishReconciliation,
  getBankAccount,
  getBankTransaction,
  getReconciliation,
  includeBankTransaction,
  listBankAccounts,
  listBankTransactions,
  listReconciliations,
  matchBankTransaction,
  matchCandidates,
  openReconciliation,
  reclassifyBankTransaction,
  reconcileBankTransaction,
  reconciliationStatus,
  splitBankTransaction,
  type BankTransaction,
  undoReconciliation,
} from '@firm/banking';
import { DomainError, type Page } from '@firm/core';
import type { Executor, Tx } from '@firm/db';
import { todayUtc } from '@firm/ledger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TSchema } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { IdempotencyHeaders, runIdempotent } from '../../plugins/idempotency';
import { DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import {
  AccountTransactionQuery,
  BankAccountList,
  BankAccountListQuery,
  BankAccountOne,
  BankTransactionList,
  BankTransactionOne,
  BankTransactionQuery,
  CompanyParams,
  CreateBankAccountBody,
  EmptyBody,
  ExcludeBody,
  FinishReconciliationBody,
  IdParams,
  MatchBody,
  MatchCandidateList,
  OpenReconciliationBody,
  ReclassifyBody,
  ReconcileBody,
  ReconciliationList,
  ReconciliationOne,
  ReconciliationQuery,
  ReconciliationStatusQuery,
  ReconciliationStatusReport,
  SplitBody,
} from './schemas';

const WRITE_ERRORS = errorResponses(409, 415, 422);
const IDEMPOTENT =
  ' Requires Idempotency-Key: the same key, path and body replays the stored response with ' +
  '`Idempotent-Replayed: true`; the key on another bank transaction or action is 422 IDEMPOTENCY_KEY_REUSED.';

/** A bank write, once per Idempotency-Key, in the transaction that stores its response. */
const idempotent = (
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  work: (tx: Tx, request: FastifyRequest) => Promise<unknown>,
) => runIdempotent(request, reply, async (tx) => ({ status, body: { data: await work(tx, request) } }));

interface RowAttachment {
  id: string;
  fileName: string;
  contentType: string;
  size: number;
  sha256: string;
}

/** Bank rows with the files attached to each (one read for all of them). */
async function withAttachments(
  db: Executor,
  organizationId: string,
  rows: BankTransaction[],
): Promise<(BankTransaction & { attachments: RowAttachment[] })[]> {
  const files = await attachmentsOf(
    db,
    organizationId,
    rows.map((r) => ({ entityType: 'bank_transaction', entityId: r.id })),
  );
  return rows.map((row) => ({
    ...row,
    attachments: files
      .filter((f) => f.links.some((l) => l.entityType === 'bank_transaction' && l.entityId === row.id))
      .map((f) => ({
        id: f.id,
        fileName: f.fileName,
        contentType: f.contentType,
        size: f.sizeBytes,
        sha256: f.sha256,
      })),
  }));
}

const withAttachmentsOne = async (db: Executor, organizationId: string, row: BankTransaction) =>
  (await withAttachments(db, organizationId, [row]))[0] as BankTransaction & { attachments: RowAttachment[] };

const withAttachmentsPage = async (db: Executor, organizationId: string, page: Page<BankTransaction>) => ({
  ...page,
  data: await withAttachments(db, organizationId, page.data),
});

/**
 * Runs a categorization citing attachments: each id is checked to be an attachment of the company before anything is
 * written (404 ATTACHMENT_NOT_FOUND naming it), and after the categorization each is attached to the row, the entry
 * it posted and the payments it recorded, in the same transaction: a refused categorization attaches nothing.
 */
async function citing(
  tx: Tx,
  ctx: ReturnType<typeof ledgerContext>,
  organizationId: string,
  rowId: string,
  attachmentIds: readonly string[] | undefined,
  categorize: () => Promise<BankTransaction>,
): Promise<BankTransaction> {
  const ids = attachmentIds ?? [];
  // An unknown row (or another organization's) is 404 BANK_TRANSACTION_NOT_FOUND whatever the body says.
  if (ids.length > 0) await getBankTransaction(tx, organizationId, rowId);
  for (const [i, id] of ids.entries()) {
    await getAttachment(tx, organizationId, id).catch((err: unknown) => {
      if (err instanceof DomainError && err.code === 'ATTACHMENT_NOT_FOUND') {
        throw new DomainError('ATTACHMENT_NOT_FOUND', `attachmentIds[${i}] is not an attachment of this company`, [
          { field: `attachmentIds[${i}]`, message: 'not found' },
        ]);
      }
      throw err;
    });
  }
  const row = await categorize();
  const refs: EntityRef[] = [
    { entityType: 'bank_transaction', entityId: row.id },
    ...(row.journalEntryId ? [{ entityType: 'journal_entry' as const, entityId: row.journalEntryId }] : []),
    ...[...new Set(row.lines.flatMap((l) => (l.paymentId ? [l.paymentId] : [])))].map((id) => ({
      entityType: 'payment' as const,
      entityId: id,
    })),
  ];
  for (const id of ids) for (const ref of refs) await linkAttachment(tx, ctx, organizationId, id, ref);
  return row;
}

interface Action {
  path: string;
  summary: string;
  description: string;
  body: TSchema;
  run(tx: Tx, request: FastifyRequest): Promise<unknown>;
}

/**
 * An action whose handler takes the body as its schema states it: the schema and the domain function's input are
 * checked against each other where the action is written (the route validated the body before `run`).
 */
function action<B extends TSchema>(def: {
  path: string;
  summary: string;
  description: string;
  body: B;
  run(
    tx: Tx,
    ctx: ReturnType<typeof ledgerContext>,
    organizationId: string,
    id: string,
    body: Static<B>,
  ): Promise<BankTransaction>;
}): Action {
  return {
    ...def,
    run: async (tx, request) => {
      const organizationId = request.organization.id;
      const row = await def.run(
        tx,
        ledgerContext(request),
        organizationId,
        (request.params as { id: string }).id,
        request.body as Static<B>,
      );
      return withAttachmentsOne(tx, organizationId, row);
    },
  };
}

/** The bank transaction actions: each one transaction with its audit and outbox events, idempotent. */
const ACTIONS: Action[] = [
  action({
    path: 'reclassify',
    summary: 'Reclassify a bank transaction',
    description:
      'Classifies the whole amount to one account, with an optional contact and tax rate. An unreviewed row is ' +
      'categorized (its entry posted: the bank account against the account named); a classified row has what it ' +
      'posted voided and a new entry posted. A reconciled row is 409 ALREADY_RECONCILED, a date in a closed period ' +
      '422 PERIOD_CLOSED, an archived account 422 INVALID_ACCOUNT.',
    body: ReclassifyBody,
    run: (tx, ctx, organizationId, id, { attachmentIds, ...body }) =>
      citing(tx, ctx, organizationId, id, attachmentIds, () =>
        reclassifyBankTransaction(tx, ctx, organizationId, id, body),
      ),
  }),
  action({
    path: 'match',
    summary: 'Match a bank transaction to invoices, bills or payments',
    description:
      'Money in matches open invoices or customer payments, money out open bills or bill payments. An open invoice ' +
      'or bill gets its payment recorded (one per contact) and becomes paid or partially paid; an existing payment ' +
      'through the same bank account is linked. The documents must add up to the bank amount (422 AMOUNT_MISMATCH) ' +
      'unless differenceAccountId takes the difference. A paid, void, unknown or other contact’s document is 422 ' +
      'INVALID_ALLOCATION. Instead of documents, bankTransactionId names the register row a posting route (purchase, ' +
      'deposit, transfer) wrote for the same money: the bank’s row takes its place and its entry, so the money is ' +
      'booked once (422 AMOUNT_MISMATCH when the amounts differ, INVALID_ALLOCATION when it is not such a row of ' +
      'this bank account or is reconciled). Naming both, or neither, is 400 VALIDATION_ERROR.',
    body: MatchBody,
    run: (tx, ctx, organizationId, id, { attachmentIds, ...body }) =>
      citing(tx, ctx, organizationId, id, attachmentIds, () => matchBankTransaction(tx, ctx, organizationId, id, body)),
  }),
  action({
    path: 'split',
    summary: 'Split a bank transaction',
    description:
      'Splits the amount across accounts and/or invoices and bills (as in match). The parts must add up exactly to ' +
      'the bank amount (422 SPLIT_MISMATCH).',
    body: SplitBody,
    run: (tx, ctx, organizationId, id, { attachmentIds, ...body }) =>
      citing(tx, ctx, organizationId, id, attachmentIds, () => splitBankTransaction(tx, ctx, organizationId, id, body)),
  }),
  action({
    path: 'reconcile',
    summary: 'Reconcile a bank transaction',
    description:
      'Checks a categorized or matched row into the open reconciliation of its bank account (409 ' +
      'NO_OPEN_RECONCILIATION without one, or when the one named belongs to another bank account or is finished). ' +
      'An unreviewed or excluded row is 409 INVALID_STATE.',
    body: ReconcileBody,
    run: (tx, ctx, organizationId, id, body) => reconcileBankTransaction(tx, ctx, organizationId, id, body),
  }),
  action({
    path: 'exclude',
    summary: 'Exclude a bank transaction',
    description:
      'Takes the row out of the books: its entry and the payments its match recorded are voided. Reversible with ' +
      'include. A reconciled row is 409 ALREADY_RECONCILED.',
    body: ExcludeBody,
    run: (tx, ctx, organizationId, id, body) => excludeBankTransaction(tx, ctx, organizationId, id, body.reason),
  }),
  action({
    path: 'include',
    summary: 'Include an excluded bank transaction',
    description: 'Brings an excluded row back as unreviewed. Anything but an excluded row is 409 INVALID_STATE.',
    body: EmptyBody,
    run: (tx, ctx, organizationId, id) => includeBankTransaction(tx, ctx, organizationId, id),
  }),
];

export const bankingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  // Actions whose fields are all optional (reconcile, exclude, include, finish, undo) may be sent without a body.
  app.addHook('preValidation', async (request) => {
    if (request.method === 'POST' && request.body === undefined) request.body = {};
  });

  for (const form of ['header', 'path'] as const) {
    const prefix = form === 'header' ? '' : '/companies/:companyId';
    const company = form === 'path' ? { params: CompanyParams } : {};

    app.get(
      `${prefix}/bank-accounts`,
      {
        config: { scope: 'bank:read', organization: form },
        schema: {
          tags: ['banking'],
          summary: form === 'header' ? 'List bank accounts' : 'Bank and register accounts of a company',
          description: 'Bank and card registers, each linked to one ledger account; ordered by name.',
          ...company,
          querystring: BankAccountListQuery,
          response: { 200: BankAccountList },
        },
      },
      async (request) => {
        const q = request.query as { limit?: number; cursor?: string };
        return listBankAccounts(db(), request.organization.id, { limit: q.limit ?? DEFAULT_LIMIT, cursor: q.cursor });
      },
    );

    app.get(
      `${prefix}/bank-transactions`,
      {
        config: { scope: 'bank:read', organization: form },
        schema: {
          tags: ['banking'],
          summary: form === 'header' ? 'List bank transactions' : 'Bank transactions of a company',
          description: 'Newest first (date, then id). Filters combine.',
          ...company,
          querystring: BankTransactionQuery,
          response: { 200: BankTransactionList },
        },
      },
      async (request) => {
        const { limit, ...filter } = request.query as { limit?: number };
        const organizationId = request.organization.id;
        const page = await listBankTransactions(db(), organizationId, { limit: limit ?? DEFAULT_LIMIT, ...filter });
        return withAttachmentsPage(db(), organizationId, page);
      },
    );

    app.get(
      `${prefix}/reconciliations`,
      {
        config: { scope: 'bank:read', organization: form },
        schema: {
          tags: ['banking'],
          summary: form === 'header' ? 'List reconciliations' : 'Reconciliation sessions of a company',
          description: 'Newest statement first.',
          ...company,
          querystring: ReconciliationQuery,
          response: { 200: ReconciliationList },
        },
      },
      async (request) => {
        const { limit, ...filter } = request.query as { limit?: number };
        return listReconciliations(db(), request.organization.id, { limit: limit ?? DEFAULT_LIMIT, ...filter });
      },
    );
  }

  app.post(
    '/bank-accounts',
    {
      config: { scope: 'bank:write', organization: 'header' },
      schema: {
        tags: ['banking'],
        summary: 'Create a bank account',
        description:
          'Adds a register for a ledger account of subtype bank or credit_card (422 INVALID_ACCOUNT otherwise). Each ' +
          'ledger account holds at most one (409 BANK_ACCOUNT_TAKEN).',
        body: CreateBankAccountBody,
        response: { 201: BankAccountOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const account = await db().transaction((tx) =>
        createBankAccount(tx, ledgerContext(request), request.organization.id, request.body),
      );
      return reply.code(201).send({ data: account });
    },
  );

  app.get(
    '/bank-accounts/:id/transactions',
    {
      config: { scope: 'bank:read', organization: 'header' },
      schema: {
        tags: ['banking'],
        summary: 'Bank transactions of one account',
        description: 'The register of one bank account, newest first, with the filters of GET /bank-transactions.',
        params: IdParams,
        querystring: AccountTransactionQuery,
        response: { 200: BankTransactionList },
      },
    },
    async (request) => {
      const account = await getBankAccount(db(), request.organization.id, request.params.id);
      const { limit, ...filter } = request.query as { limit?: number };
      const page = await listBankTransactions(db(), request.organization.id, {
        limit: limit ?? DEFAULT_LIMIT,
        ...filter,
        bankAccountId: account.id,
      });
      return withAttachmentsPage(db(), request.organization.id, page);
    },
  );

  app.get(
    '/bank-transactions/:id',
    {
      config: { scope: 'bank:read', organization: 'header' },
      schema: {
        tags: ['banking'],
        summary: 'A bank transaction',
        params: IdParams,
        response: { 200: BankTransactionOne },
      },
    },
    async (request) => ({
      data: await withAttachmentsOne(
        db(),
        request.organization.id,
        await getBankTransaction(db(), request.organization.id, request.params.id),
      ),
    }),
  );

  app.get(
    '/bank-transactions/:id/match-candidates',
    {
      config: { scope: 'bank:read', organization: 'header' },
      schema: {
        tags: ['banking'],
        summary: 'What a bank transaction could be matched to',
        description:
          'Open invoices and unmatched customer payments through its bank account for money in, open bills and ' +
          'unmatched bill payments for money out, and the register rows posting routes wrote for the same amount ' +
          '(type posting, matched with bankTransactionId); exact amounts first, then the nearest dates (at most 20).',
        params: IdParams,
        response: { 200: MatchCandidateList },
      },
    },
    async (request) => ({ data: await matchCandidates(db(), request.organization.id, request.params.id) }),
  );

  for (const action of ACTIONS) {
    app.post(
      `/bank-transactions/:id/${action.path}`,
      {
        config: { scope: 'bank:write', organization: 'header' },
        schema: {
          tags: ['banking'],
          summary: action.summary,
          description: action.description + IDEMPOTENT,
          params: IdParams,
          headers: IdempotencyHeaders,
          ...(action.body ? { body: action.body } : {}),
          response: { 200: BankTransactionOne, ...WRITE_ERRORS },
        },
      },
      async (request, reply) => idempotent(request, reply, 200, action.run),
    );
  }

  app.get(
    '/reconciliations/:id',
    {
      config: { scope: 'bank:read', organization: 'header' },
      schema: {
        tags: ['banking'],
        summary: 'A reconciliation',
        params: IdParams,
        response: { 200: ReconciliationOne },
      },
    },
    async (request) => ({ data: await getReconciliation(db(), request.organization.id, request.params.id) }),
  );

  app.post(
    '/reconciliations',
    {
      config: { scope: 'bank:write', organization: 'header' },
      schema: {
        tags: ['banking'],
        summary: 'Open a reconciliation',
        description:
          'Opens a session for a bank account and its statement (end date, ending balance in the register’s sign). One ' +
          'open session per account (409 RECONCILIATION_OPEN); the statement must end after the last finished one.' +
          IDEMPOTENT,
        headers: IdempotencyHeaders,
        body: OpenReconciliationBody,
        response: { 201: ReconciliationOne, ...WRITE_ERRORS },
      },
    },
    async (request, reply) =>
      idempotent(request, reply, 201, (tx) =>
        openReconciliation(tx, ledgerContext(request), request.organization.id, request.body),
      ),
  );

  app.post(
    '/reconciliations/:id/finish',
    {
      config: { scope: 'bank:write', organization: 'header' },
      schema: {
        tags: ['banking'],
        summary: 'Finish a reconciliation',
        description:
          'Finishes when the cleared balance equals the statement ending balance; otherwise 422 ' +
          'RECONCILIATION_UNBALANCED with the difference, unless adjustmentAccountId asks for an adjustment row.' +
          IDEMPOTENT,
        params: IdParams,
        headers: IdempotencyHeaders,
        body: FinishReconciliationBody,
        response: { 200: ReconciliationOne, ...WRITE_ERRORS },
      },
    },
    async (request, reply) =>
      idempotent(request, reply, 200, (tx) =>
        finishReconciliation(tx, ledgerContext(request), request.organization.id, request.params.id, request.body),
      ),
  );

  app.post(
    '/reconciliations/:id/undo',
    {
      config: { scope: 'bank:write', organization: 'header' },
      schema: {
        tags: ['banking'],
        summary: 'Undo the last finished reconciliation',
        description:
          'Its transactions are no longer reconciled and an adjustment it booked is excluded. Only the last finished ' +
          'session of its bank account, and not while another is open (409 INVALID_STATE).' +
          IDEMPOTENT,
        params: IdParams,
        headers: IdempotencyHeaders,
        body: EmptyBody,
        response: { 200: ReconciliationOne, ...WRITE_ERRORS },
      },
    },
    async (request, reply) =>
      idempotent(request, reply, 200, (tx) =>
        undoReconciliation(tx, ledgerContext(request), request.organization.id, request.params.id),
      ),
  );

  app.get(
    '/reports/bank-reconciliation-status',
    {
      config: { scope: 'reports:read', organization: 'header' },
      schema: {
        tags: ['reports'],
        summary: 'Bank reconciliation status',
        description:
          'Per bank account: the last finished reconciliation (date and balance), what is in the books but not ' +
          'reconciled (count and amount), rows waiting for review, the ledger and register balances, and feed health.',
        querystring: ReconciliationStatusQuery,
        response: { 200: ReconciliationStatusReport },
      },
    },
    async (request) => {
      const endDate = request.query.endDate ?? todayUtc();
      return { endDate, rows: await reconciliationStatus(db(), request.organization.id, endDate) };
    },
  );
};
