import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { SingleBar } from 'cli-progress';
import { type Aggregator, connectBankFeed, syncFeed, type TokenKeys } from '@firm/banking';
import { DomainError, isDomainError, isUuid } from '@firm/core';
import {
  type AttachmentStoreConfig,
  type AttachmentStores,
  attachmentStoresFrom,
  moveCompanyFiles,
} from '@firm/attachments';
import {
  DEFAULT_IMPORT_MAX_BYTES,
  DEFAULT_INLINE_MAX_ROWS,
  discardImport,
  getImport,
  type ImportView,
  importWorkerId,
  receiveImport,
  refusalOf,
  runNextImport,
  settleImport,
} from '@firm/imports';
import { type Database, isConnectionLost, pgErrorOf, purgeExpiredIdempotencyKeys } from '@firm/db';
import { DEMO_FIRM_SLUG, DEMO_OWNER_EMAIL, seedDemo } from '@firm/demo';
import { type AuditTrail, type ChainReport, verifyAuditChains } from '@firm/gateway';
import { CLOSE_EVIDENCE_HASHERS } from '@firm/close';
import {
  USER_ROLES,
  type FirmUser,
  type Invitation,
  type Manager,
  type UserRole,
  canApproveApps,
  createApiKey,
  createFirm,
  createOAuthClient,
  createUser,
  deactivateUser,
  findFirm,
  firmIdOfSlug,
  firmOfUser,
  firmUserByEmail,
  generatePassword,
  inviteUser,
  listUsers,
  reissueInvitation,
  revokeApiKey,
  revokeOAuthClient,
} from '@firm/identity';
import {
  CHART_TEMPLATE_NAMES,
  type ChartTemplate,
  type Company,
  companyById,
  createCompany,
  firmCompanyNames,
  listCompanies,
  parseOpeningBalancesCsv,
  postOpeningBalances,
  presentAccount,
  presentCompany,
  presentEntry,
  setCompanyArchived,
} from '@firm/ledger';
import { disconnect, listConnections, type QboConfig, type QboConnection, startAuthorization } from '@firm/qbo';

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Everything on standard input, for the commands that read a secret from it. */
  stdin?: () => Promise<string>;
  /** A terminal to draw progress bars on (standard output when it is one); none: no bar. */
  progress?: NodeJS.WriteStream;
}

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | string[] | boolean[] | undefined>;

/** What the bank-feed commands talk to: the aggregator and the keys sealing its tokens. */
export interface BankingDeps {
  aggregator: Aggregator;
  tokenKeys: TokenKeys;
}

/** What the user commands need of the API's configuration: where invitation links point, and how long they work. */
export interface CliSettings {
  /** PUBLIC_ORIGIN: invitation links are printed whole; unset, as a path on the server's address. */
  publicOrigin?: string | undefined;
  /** INVITATION_TTL_HOURS. */
  invitationTtlHours: number;
  /** The attachment stores' settings (ATTACHMENTS_STORE, ATTACHMENTS_S3_*), for `attachments move`. */
  attachments?: AttachmentStoreConfig | undefined;
}

export const DEFAULT_CLI_SETTINGS: CliSettings = { invitationTtlHours: 168 };

interface Run {
  values: Values;
  settings: CliSettings;
  args: string[];
  database: Database;
  io: Io;
  print: (value: unknown, human: string) => void;
  /** The aggregator and token keys; undefined with BANK_FEEDS=off, or why the settings are refused. */
  banking: BankingDeps | string | undefined;
  /** QuickBooks Online, when QBO_CLIENT_ID is set. */
  qbo: QboConfig | null;
  /** The agent audit trail's keys and anchors, opened only by the command that needs them. */
  audit: (() => Promise<AuditTrail>) | undefined;
}

interface Command {
  /** The words that name it: ['api-key', 'create']. */
  name: string[];
  /** Positional arguments, in order; all required. */
  args?: string[];
  options?: Options;
  /** Option synopsis for the usage line. */
  synopsis?: string;
  summary: string;
  /** Further help text, printed by `--help`. */
  help?: string;
  /** Reads a secret from standard input when this option is given (forwarded to the owner as text). */
  stdinOption?: string;
  run(run: Run): Promise<number>;
}

class UsageError extends Error {}
/** An operational failure with a message fit for the operator: printed as one line, exit code 1. */
class CliError extends Error {}

const json = { json: { type: 'boolean' } } as const satisfies Options;
/** Who the CLI is in the audit trail, and its rights over users: the operator, as an owner. */
const OPERATOR = { kind: 'cli', id: 'operator' } as const;
const operatorOf = (firmId: string): Manager => ({ ...OPERATOR, firmId, role: 'owner', userId: null });

async function firmOfUserId(database: Database, userId: string): Promise<string> {
  const firmId = await firmOfUser(database.db, userId);
  if (!firmId) throw new CliError(`no user ${userId}`);
  return firmId;
}

const userLine = (u: FirmUser) =>
  `${u.id}  ${u.role.padEnd(6)}  ${u.status.padEnd(11)}  ${u.email}  ${u.name}` +
  (u.organizationIds ? `  (companies: ${u.organizationIds.join(', ')})` : '');

function printInvitation(run: Run, user: FirmUser, invitation: Invitation): void {
  const path = `/invite/${invitation.token}`;
  const url = run.settings.publicOrigin ? `${run.settings.publicOrigin}${path}` : null;
  run.print(
    {
      ...user,
      createdAt: user.createdAt.toISOString(),
      deactivatedAt: null,
      invitation: { url: url ?? path, expiresAt: invitation.expiresAt.toISOString() },
    },
    [
      `user ${user.id}  ${user.email}  ${user.role}  (invited)`,
      `invitation link (works once, until ${invitation.expiresAt.toISOString()}; shown once):`,
      url ?? `${path}   (on the server's address; set PUBLIC_ORIGIN to print it whole)`,
    ].join('\n'),
  );
}
const uuid = (value: unknown, what: string): string => {
  if (typeof value !== 'string' || !isUuid(value)) throw new UsageError(`${what} must be a UUID`);
  return value;
};

async function requireFirm(database: Database, firmId: string): Promise<void> {
  if (!(await findFirm(database.db, firmId))) throw new CliError(`no firm ${firmId}`);
}

/** The organization a command acts in, which names it by id alone. */
async function requireCompany(database: Database, organizationId: string): Promise<Company> {
  const company = await companyById(database.db, organizationId);
  if (!company) throw new CliError(`no organization ${organizationId}`);
  return company;
}

/** The firm of an organization, for the commands that act in one. */
async function firmOfOrganization(database: Database, organizationId: string): Promise<string> {
  return (await requireCompany(database, organizationId)).firmId;
}

/** The owner or admin of the firm with this email: the person a QuickBooks connection is bound to. */
async function firmManager(database: Database, firmId: string, email: string): Promise<string> {
  const user = await firmUserByEmail(database.db, firmId, email);
  if (!user) throw new CliError(`no user ${email} in the firm of this organization`);
  if (!canApproveApps(user.role)) throw new CliError(`${email} is not an owner or admin of the firm`);
  return user.id;
}

/** What the CLI's writes record as their actor. */
const operator = (firmId: string) => ({ firmId, actor: { kind: 'cli', id: 'operator' } });

const companyLine = (c: Company) =>
  `company ${c.id}  ${c.name}  ${c.currency}  fiscal year from month ${c.fiscalYearStartMonth}` +
  `${c.archivedAt ? `  (archived ${c.archivedAt.toISOString()})` : ''}`;

async function syncAndPrint(run: Run, organizationId: string, firmId: string, feedId: string): Promise<number> {
  const banking = requireBanking(run);
  const ctx = { firmId, actor: { kind: 'cli', id: 'operator' } };
  const result = await syncFeed(run.database.db, ctx, banking.aggregator, banking.tokenKeys, organizationId, feedId);
  run.print(
    { feedId, ...result },
    `feed ${feedId}: ${result.pages} page(s), ${result.added} added, ${result.modified} modified, ${result.removed} removed`,
  );
  return 0;
}

function requireQbo(run: Run): QboConfig {
  if (!run.qbo)
    throw new CliError('QuickBooks Online is not configured (set QBO_CLIENT_ID, QBO_CLIENT_SECRET, QBO_REDIRECT_URI)');
  return run.qbo;
}

const connectionLine = (c: QboConnection) =>
  `${c.organizationId}  realm ${c.realmId}  ${c.status}${c.lastError ? `  (${c.lastError})` : ''}`;

function requireBanking(run: Run): BankingDeps {
  if (typeof run.banking === 'string') throw new CliError(run.banking);
  if (!run.banking) throw new CliError('bank feeds are turned off (BANK_FEEDS=off)');
  return run.banking;
}

const COMMANDS: Command[] = [
  {
    name: ['qbo', 'connect'],
    options: { ...json, organization: { type: 'string' }, user: { type: 'string' } },
    synopsis: '--organization ID --user EMAIL [--json]',
    summary: 'start connecting an organization to a QuickBooks Online company',
    help:
      "Prints Intuit's authorization URL as the last line: open it, sign in to Intuit and pick the company. Intuit\n" +
      "then sends the browser to QBO_REDIRECT_URI (the API's /api/qbo/callback), which finishes the connection.\n" +
      'The URL is valid for 15 minutes, once, and only in a browser signed in (at /login) as --user, an owner or\n' +
      "admin of the organization's firm.",
    async run(run) {
      const config = requireQbo(run);
      const organizationId = uuid(run.values.organization, '--organization');
      if (typeof run.values.user !== 'string') throw new UsageError('qbo connect needs --user EMAIL');
      const firmId = await firmOfOrganization(run.database, organizationId);
      const userId = await firmManager(run.database, firmId, run.values.user);
      const started = await startAuthorization(run.database.db, config, { firmId, organizationId, userId });
      run.print(
        { authorizationUrl: started.url, expiresAt: started.expiresAt.toISOString() },
        [
          `open this URL signed in as ${run.values.user} to connect ${organizationId} (valid until ${started.expiresAt.toISOString()}):`,
          started.url,
        ].join('\n'),
      );
      return 0;
    },
  },
  {
    name: ['qbo', 'status'],
    options: { ...json, firm: { type: 'string' } },
    synopsis: '[--firm ID] [--json]',
    summary: 'list QuickBooks Online connections and their status',
    async run({ values, database, print }) {
      const firmId = values.firm === undefined ? null : uuid(values.firm, '--firm');
      const list = await listConnections(database.db, firmId);
      print(
        list.map((c) => ({
          ...c,
          accessExpiresAt: c.accessExpiresAt.toISOString(),
          updatedAt: c.updatedAt.toISOString(),
          lastSyncAt: c.lastSyncAt?.toISOString() ?? null,
        })),
        list.length ? list.map(connectionLine).join('\n') : 'no QuickBooks connections',
      );
      return 0;
    },
  },
  {
    name: ['qbo', 'disconnect'],
    options: { ...json, organization: { type: 'string' } },
    synopsis: '--organization ID [--json]',
    summary: "revoke an organization's QuickBooks authorization and disconnect it",
    async run(run) {
      const config = requireQbo(run);
      const organizationId = uuid(run.values.organization, '--organization');
      const { revoked } = await disconnect(run.database.db, config, organizationId);
      run.print(
        { organizationId, revoked },
        `disconnected ${organizationId}${revoked ? '' : ' (Intuit did not confirm the revocation)'}`,
      );
      return 0;
    },
  },
  {
    name: ['migrate'],
    summary: 'apply pending migrations',
    async run({ database, io }) {
      await database.migrate();
      io.out('migrations applied');
      return 0;
    },
  },
  {
    name: ['seed'],
    options: { ...json, 'new-key': { type: 'boolean' }, empty: { type: 'boolean' } },
    synopsis: '[--new-key] [--empty] [--json]',
    summary: 'create the demo firm once; a second run changes nothing',
    help:
      'Migrates, then creates the demo firm (an owner, two client companies with a standard chart, an API key)\n' +
      'when it does not exist, each company with twelve months of books ending last month (invoices, bills,\n' +
      'payroll, rent, a loan, depreciation, sales tax, a reconciled bank feed with last month left to review);\n' +
      '--empty leaves the books empty. On a seeded database it mints nothing unless --new-key asks for a fresh\n' +
      'demo key.\n' +
      '--json prints {created, firmId, apiKey, apiKeyId, organizations, user, history}; apiKey and apiKeyId are\n' +
      'null when no key was minted, user.password when the owner already existed; history (the dates and counts\n' +
      'of each company, by company id) only on the run that created the firm.',
    async run({ values, database, print }) {
      await database.migrate();
      const existing = await firmIdOfSlug(database.db, DEMO_FIRM_SLUG);
      if (existing && !values['new-key']) {
        const orgs = await firmCompanyNames(database.db, existing);
        print(
          {
            created: false,
            firmId: existing,
            apiKey: null,
            apiKeyId: null,
            organizations: orgs,
            user: { email: DEMO_OWNER_EMAIL, password: null },
          },
          [
            'the demo firm exists; nothing was created (seed --new-key issues a fresh demo key)',
            `firm:     ${existing}`,
            ...orgs.map((o) => `company:  ${o.id}  ${o.name}`),
          ].join('\n'),
        );
        return 0;
      }
      const result = await seedDemo(database.db, { history: !values.empty });
      print(
        result,
        [
          result.created ? 'seeded the demo firm' : 'the demo firm exists; issued a new API key',
          `firm:     ${result.firmId}`,
          ...result.organizations.map((o) => {
            const h = result.history[o.id];
            return `company:  ${o.id}  ${o.name}${h ? `  (books ${h.startDate} to ${h.endDate})` : ''}`;
          }),
          `owner:    ${result.user.email}${result.user.password ? `  password: ${result.user.password}` : ''}`,
          `API key:  ${result.apiKey}  (shown once)`,
        ].join('\n'),
      );
      return 0;
    },
  },
  {
    name: ['firm', 'create'],
    options: { ...json, name: { type: 'string' }, slug: { type: 'string' } },
    synopsis: '--name NAME [--slug SLUG] [--json]',
    summary: 'create a firm (then add its owner with user create)',
    async run({ values, database, print }) {
      if (typeof values.name !== 'string') throw new UsageError('firm create needs --name NAME');
      const firm = await createFirm(database.db, {
        name: values.name,
        ...(typeof values.slug === 'string' ? { slug: values.slug } : {}),
      });
      print({ id: firm.id, name: firm.name, slug: firm.slug }, `firm ${firm.id}  ${firm.name}  (slug ${firm.slug})`);
      return 0;
    },
  },
  {
    name: ['company', 'create'],
    options: {
      ...json,
      firm: { type: 'string' },
      name: { type: 'string' },
      'legal-name': { type: 'string' },
      'tax-id': { type: 'string' },
      currency: { type: 'string' },
      'fiscal-year-start-month': { type: 'string' },
      chart: { type: 'string' },
    },
    synopsis:
      '--firm ID --name NAME [--legal-name NAME] [--tax-id ID] [--currency CODE] [--fiscal-year-start-month 1-12] ' +
      '[--chart standard|empty] [--json]',
    summary: 'create a client company of a firm',
    help:
      'As POST /api/v1/companies: the currency is an ISO 4217 code (USD by default; it cannot change once the\n' +
      'company has posted entries), the fiscal year starts in January unless said, and the chart is the standard\n' +
      'small-business chart unless --chart empty. Names are unique in the firm. The agent gateway lists the company\n' +
      'as a client with agent access none until an owner or admin opens it. Records company.created.',
    async run({ values, database, print }) {
      const firmId = uuid(values.firm, '--firm');
      if (typeof values.name !== 'string') throw new UsageError('company create needs --name NAME');
      const chart = values.chart;
      if (chart !== undefined && !CHART_TEMPLATE_NAMES.includes(chart as ChartTemplate)) {
        throw new UsageError(`--chart: one of ${CHART_TEMPLATE_NAMES.join(', ')}`);
      }
      const month = values['fiscal-year-start-month'];
      if (month !== undefined && !/^(?:[1-9]|1[0-2])$/.test(String(month))) {
        throw new UsageError('--fiscal-year-start-month: a month number 1-12');
      }
      await requireFirm(database, firmId);
      const company = await database.db.transaction((tx) =>
        createCompany(tx, operator(firmId), {
          name: values.name as string,
          legalName: values['legal-name'] as string | undefined,
          taxId: values['tax-id'] as string | undefined,
          currency: values.currency as string | undefined,
          fiscalYearStartMonth: month === undefined ? undefined : Number(month),
          chartTemplate: chart as ChartTemplate | undefined,
        }),
      );
      print(presentCompany(company), companyLine(company));
      return 0;
    },
  },
  {
    name: ['company', 'list'],
    options: { ...json, firm: { type: 'string' }, status: { type: 'string' } },
    synopsis: '--firm ID [--status active|archived|all] [--json]',
    summary: "list a firm's client companies (the active ones unless --status says otherwise)",
    async run({ values, database, print }) {
      const firmId = uuid(values.firm, '--firm');
      const status = values.status ?? 'active';
      if (status !== 'active' && status !== 'archived' && status !== 'all') {
        throw new UsageError('--status: active, archived or all');
      }
      await requireFirm(database, firmId);
      const list = await listCompanies(database.db, firmId, status);
      print(list.map(presentCompany), list.length ? list.map(companyLine).join('\n') : 'no companies');
      return 0;
    },
  },
  {
    name: ['company', 'opening-balances'],
    options: {
      ...json,
      company: { type: 'string' },
      file: { type: 'string' },
      date: { type: 'string' },
      'create-missing': { type: 'boolean' },
      replace: { type: 'boolean' },
      'close-books-before': { type: 'boolean' },
    },
    synopsis:
      '--company ID --file PATH --date YYYY-MM-DD [--create-missing] [--replace] [--close-books-before] [--json]',
    summary: "post a company's opening balances from a CSV file",
    help:
      'As POST /api/v1/companies/{companyId}/opening-balances with a CSV body: a header row naming the columns\n' +
      '(code and/or name, debit, credit, optionally type), then one row per account with its balance in debit or\n' +
      'credit (decimal amounts, at most two decimals). One balanced entry is posted on --date; the difference goes to\n' +
      'the Opening balance equity account. --create-missing creates unknown accounts (type from the type column or\n' +
      "the code range), --replace voids the company's opening entry first, --close-books-before closes the books\n" +
      'through the day before --date. Every bad row is listed, one a line, and nothing is written.',
    async run({ values, database, print, io }) {
      const organizationId = uuid(values.company, '--company');
      if (typeof values.file !== 'string') throw new UsageError('company opening-balances needs --file PATH');
      if (typeof values.date !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(values.date)) {
        throw new UsageError('company opening-balances needs --date YYYY-MM-DD');
      }
      const text = await readFile(values.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw new CliError(`cannot read ${values.file}: ${err.code ?? err.message}`);
      });
      const firmId = await firmOfOrganization(database, organizationId);
      try {
        const csv = parseOpeningBalancesCsv(text);
        const result = await database.db.transaction((tx) =>
          postOpeningBalances(tx, operator(firmId), organizationId, {
            date: values.date as string,
            ...csv,
            createMissingAccounts: values['create-missing'] === true,
            replace: values.replace === true,
            closeBooksBefore: values['close-books-before'] === true,
          }),
        );
        const { entry, createdAccounts, difference } = result;
        print(
          {
            entry: presentEntry(entry),
            createdAccounts: createdAccounts.map(presentAccount),
            difference,
            replacedEntryId: result.replacedEntryId,
            booksClosedThrough: result.booksClosedThrough,
          },
          [
            `entry ${entry.id}  ${entry.date}  ${entry.lines.length} lines  total ${(entry.totalCents / 100).toFixed(2)}`,
            `accounts created: ${createdAccounts.length ? createdAccounts.map((a) => `${a.code} (${a.type})`).join(', ') : 'none'}`,
            difference.account
              ? `difference ${(difference.cents / 100).toFixed(2)} ${difference.side} to ${difference.account.code} ${difference.account.name}`
              : 'debits equal credits: no difference',
            ...(result.replacedEntryId ? [`replaced entry ${result.replacedEntryId} (voided)`] : []),
            ...(result.booksClosedThrough ? [`books closed through ${result.booksClosedThrough}`] : []),
          ].join('\n'),
        );
        return 0;
      } catch (err) {
        // Every bad row, one a line, so the file can be fixed in one go.
        if (!isDomainError(err) || err.code !== 'OPENING_BALANCES_INVALID') throw err;
        io.err(`error: ${err.code}: ${err.message}`);
        for (const detail of err.details ?? []) if ((err.details?.length ?? 0) > 1) io.err(`  ${detail.message}`);
        return 1;
      }
    },
  },
  ...(['archive', 'unarchive'] as const).map((action): Command => ({
    name: ['company', action],
    args: ['ID'],
    options: { ...json },
    synopsis: '[--json]',
    summary:
      action === 'archive'
        ? 'archive a company: its books stay readable, every write to them is refused until it is unarchived'
        : 'unarchive a company: its books can be written to again',
    async run({ args, database, print }) {
      const id = uuid(args[0], 'the company ID');
      const firmId = await firmOfOrganization(database, id);
      const { company } = await database.db.transaction((tx) =>
        setCompanyArchived(tx, operator(firmId), id, action === 'archive'),
      );
      print(presentCompany(company), companyLine(company));
      return 0;
    },
  })),
  {
    name: ['company', 'import'],
    options: {
      ...json,
      company: { type: 'string' },
      file: { type: 'string' },
      kind: { type: 'string' },
      format: { type: 'string' },
      atomicity: { type: 'string' },
    },
    synopsis:
      '--company ID --file PATH [--kind journal|accounts] [--format csv|hledger] [--atomicity file|entry] [--json]',
    summary: 'import journal history or a chart of accounts into a company from a file',
    help:
      'As POST /api/v1/companies/{companyId}/imports, through the same code: the file is read as a stream and every\n' +
      'row checked before anything is written; bad rows are listed (line, column, why) and, with --atomicity file\n' +
      '(the default), nothing is written. A file of more than 5,000 rows is posted in batches with a progress bar\n' +
      '(on a terminal). The same file again writes nothing and prints the import that brought it in.',
    async run({ values, database, print, io }) {
      const companyId = uuid(values.company, '--company');
      if (typeof values.file !== 'string') throw new UsageError('company import needs --file PATH');
      const kind = (values.kind ?? 'journal') as string;
      const format = (values.format ?? 'csv') as string;
      const atomicity = (values.atomicity ?? 'file') as string;
      if (kind !== 'journal' && kind !== 'accounts') throw new UsageError('--kind: journal or accounts');
      if (format !== 'csv' && format !== 'hledger') throw new UsageError('--format: csv or hledger');
      if (kind === 'accounts' && format !== 'csv') throw new UsageError('--format: a chart of accounts is CSV');
      if (atomicity !== 'file' && atomicity !== 'entry') throw new UsageError('--atomicity: file or entry');
      const file = values.file;
      const size = await stat(file).then(
        (s) => s.size,
        () => {
          throw new CliError(`cannot read ${file}`);
        },
      );
      if (size > DEFAULT_IMPORT_MAX_BYTES) {
        throw new CliError(`${file} has ${size} bytes; an imported file may have at most ${DEFAULT_IMPORT_MAX_BYTES}`);
      }
      const { firmId, archivedAt } = await requireCompany(database, companyId);
      if (archivedAt) throw new DomainError('COMPANY_ARCHIVED', 'the company is archived; unarchive it first');
      const ctx = operator(firmId);
      const reading = io.progress
        ? new SingleBar({
            stream: io.progress,
            format: 'checking  [{bar}] {percentage}% | {value}/{total} bytes',
            hideCursor: true,
          })
        : null;
      reading?.start(size, 0);
      const received = await receiveImport(
        database.db,
        ctx,
        companyId,
        {
          kind,
          format,
          atomicity,
          maxBytes: DEFAULT_IMPORT_MAX_BYTES,
          onRead: (bytes) => reading?.update(bytes),
        },
        createReadStream(file),
      ).finally(() => reading?.stop());
      let settled: Awaited<ReturnType<typeof settleImport>>;
      try {
        const refusal = await refusalOf(database.db, received);
        if (refusal) {
          const lines = received.errors.map((e) => `  line ${e.line}${e.column ? `, ${e.column}` : ''}: ${e.message}`);
          print(
            { error: { code: refusal.code, message: refusal.message, details: refusal.details } },
            [`${refusal.code}: ${refusal.message}`, ...lines].join('\n'),
          );
          return 1;
        }
        settled = await database.db.transaction((tx) =>
          settleImport(tx, ctx, received, { inlineMaxRows: DEFAULT_INLINE_MAX_ROWS }),
        );
      } finally {
        await discardImport(database.db, companyId, received.id);
      }
      let done: ImportView = settled.import;
      if (settled.status === 202) done = await follow(database, companyId, done, io.progress);
      const { errors, ...shown } = await getImport(database.db, companyId, done.id);
      print({ ...shown, errors }, [importLine(shown, settled.status === 200), ...errorLines(errors)].join('\n'));
      return shown.status === 'failed' ? 1 : 0;
    },
  },
  {
    name: ['user', 'create'],
    options: {
      ...json,
      firm: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
      'password-stdin': { type: 'boolean' },
    },
    stdinOption: 'password-stdin',
    synopsis: '--firm ID --email EMAIL --role owner|admin|member [--name NAME] [--password-stdin] [--json]',
    summary: 'add a user who signs in at /login',
    help:
      'With --password-stdin the password is read from standard input (its last line break dropped; at least 12\n' +
      'characters). Without it a random password is generated and printed once. Only a hash is stored.',
    async run({ values, database, io, print }) {
      const firmId = uuid(values.firm, '--firm');
      if (typeof values.email !== 'string') throw new UsageError('user create needs --email EMAIL');
      const role = values.role;
      if (typeof role !== 'string' || !USER_ROLES.includes(role as UserRole)) {
        throw new UsageError(`user create needs --role ${USER_ROLES.join('|')}`);
      }
      let password: string;
      let generated = false;
      if (values['password-stdin']) {
        if (!io.stdin) throw new CliError('standard input is not available to this command');
        password = (await io.stdin()).replace(/\r?\n$/, '');
      } else {
        password = generatePassword();
        generated = true;
      }
      const user = await createUser(
        database.db,
        {
          firmId,
          email: values.email,
          role: role as UserRole,
          password,
          ...(typeof values.name === 'string' ? { name: values.name } : {}),
        },
        OPERATOR,
      );
      print(
        {
          id: user.id,
          firmId: user.firmId,
          email: user.email,
          name: user.name,
          role: user.role,
          password: generated ? password : null,
        },
        [
          `user ${user.id}  ${user.email}  ${user.role}`,
          ...(generated ? [`password: ${password}  (shown once)`] : []),
        ].join('\n'),
      );
      return 0;
    },
  },
  {
    name: ['user', 'invite'],
    options: {
      ...json,
      firm: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
      org: { type: 'string', multiple: true },
    },
    synopsis: '--firm ID --email EMAIL --role owner|admin|member [--name NAME] [--org ORG_ID ...] [--json]',
    summary: 'invite a user: prints their single-use sign-in link',
    help:
      'The user exists at once, without a password (status invited). The link, printed once, lets them choose a\n' +
      'password and signs them in; it works once, for INVITATION_TTL_HOURS (168 by default). No mail is sent.\n' +
      '--org limits a member to those companies (repeat it); without it a member sees every company of the firm.',
    async run(run) {
      const { values, database } = run;
      const firmId = uuid(values.firm, '--firm');
      if (typeof values.email !== 'string') throw new UsageError('user invite needs --email EMAIL');
      const role = values.role;
      if (typeof role !== 'string' || !USER_ROLES.includes(role as UserRole)) {
        throw new UsageError(`user invite needs --role ${USER_ROLES.join('|')}`);
      }
      const orgs = (values.org as string[] | undefined) ?? [];
      for (const org of orgs) uuid(org, `--org ${org}`);
      await requireFirm(database, firmId);
      const { user, invitation } = await inviteUser(database.db, operatorOf(firmId), {
        firmId,
        email: values.email,
        role: role as UserRole,
        name: typeof values.name === 'string' ? values.name : undefined,
        organizationIds: orgs.length ? orgs : null,
        ttlMs: run.settings.invitationTtlHours * 3_600_000,
      });
      printInvitation(run, user, invitation);
      return 0;
    },
  },
  {
    name: ['user', 'reinvite'],
    args: ['USER_ID'],
    options: { ...json },
    synopsis: '[--json]',
    summary: 'a new sign-in link for a user still invited; earlier links stop working',
    async run(run) {
      const userId = uuid(run.args[0], 'the user ID');
      const firmId = await firmOfUserId(run.database, userId);
      const ttlMs = run.settings.invitationTtlHours * 3_600_000;
      const { user, invitation } = await reissueInvitation(run.database.db, operatorOf(firmId), userId, ttlMs);
      printInvitation(run, user, invitation);
      return 0;
    },
  },
  {
    name: ['user', 'deactivate'],
    args: ['USER_ID'],
    summary: 'take a user off their firm: sessions, approved OAuth connections and keys they made stop at once',
    help:
      'The user can no longer sign in; their sessions end; the OAuth connections they approved are revoked with\n' +
      'every token; the API keys they made and their open invitations are revoked. The last active owner of a\n' +
      'firm cannot be deactivated. Running servers refuse their keys within AUTH_CACHE_TTL_MS.',
    async run({ args, database, io }) {
      const userId = uuid(args[0], 'the user ID');
      const firmId = await firmOfUserId(database, userId);
      const { changed } = await deactivateUser(database.db, operatorOf(firmId), userId);
      io.out(changed ? `deactivated ${userId}` : `${userId} was already deactivated`);
      return 0;
    },
  },
  {
    name: ['user', 'list'],
    options: { ...json, firm: { type: 'string' } },
    synopsis: '--firm ID [--json]',
    summary: "list a firm's users, with their status (invited, active, deactivated)",
    async run({ values, database, print }) {
      const list: FirmUser[] = [];
      let cursor: string | undefined;
      do {
        const page = await listUsers(database.db, uuid(values.firm, '--firm'), { limit: 1000, cursor });
        list.push(...page.data);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      print(
        list.map((u) => ({
          ...u,
          createdAt: u.createdAt.toISOString(),
          deactivatedAt: u.deactivatedAt?.toISOString() ?? null,
        })),
        list.length ? list.map(userLine).join('\n') : 'no users',
      );
      return 0;
    },
  },
  {
    name: ['api-key', 'create'],
    options: {
      ...json,
      firm: { type: 'string' },
      org: { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      name: { type: 'string' },
    },
    synopsis: '--firm ID [--org ID ...] [--scope S ...] [--name NAME] [--json]',
    summary: 'issue an API key (shown once)',
    async run({ values, database, print }) {
      const firmId = uuid(values.firm, '--firm');
      const orgs = (values.org as string[] | undefined) ?? [];
      for (const org of orgs) uuid(org, `--org ${org}`);
      await requireFirm(database, firmId);
      const scopes = values.scope as string[] | undefined;
      const { key, record } = await createApiKey(
        database.db,
        {
          firmId,
          ...(typeof values.name === 'string' ? { name: values.name } : {}),
          ...(scopes ? { scopes } : {}),
          ...(orgs.length ? { organizationIds: orgs } : {}),
        },
        { actor: OPERATOR },
      );
      print(
        { id: record.id, apiKey: key, scopes: record.scopes, organizationIds: record.organizationIds },
        `API key ${record.id}\n${key}\n(shown once; scopes: ${record.scopes.join(' ')})`,
      );
      return 0;
    },
  },
  {
    name: ['api-key', 'revoke'],
    args: ['ID'],
    summary: 'revoke an API key',
    async run({ args, database, io }) {
      const id = uuid(args[0], 'the key ID');
      if (!(await revokeApiKey(database.db, id, undefined, OPERATOR))) throw new CliError(`no API key ${id}`);
      io.out(`revoked ${id}`);
      return 0;
    },
  },
  {
    name: ['oauth-client', 'create'],
    options: {
      ...json,
      name: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      public: { type: 'boolean' },
      firm: { type: 'string' },
    },
    synopsis: '--name NAME --redirect-uri URI [--redirect-uri URI ...] [--public] [--firm ID] [--json]',
    summary: 'register an OAuth client (confidential: its secret is shown once)',
    async run({ values, database, print }) {
      if (typeof values.name !== 'string') throw new UsageError('oauth-client create needs --name NAME');
      const redirectUris = (values['redirect-uri'] as string[] | undefined) ?? [];
      if (!redirectUris.length) throw new UsageError('oauth-client create needs --redirect-uri URI');
      const firmId = values.firm === undefined ? null : uuid(values.firm, '--firm');
      if (firmId) await requireFirm(database, firmId);
      const { client, clientSecret } = await createOAuthClient(database.db, {
        name: values.name,
        redirectUris,
        isPublic: Boolean(values.public),
        firmId,
      });
      print(
        {
          clientId: client.clientId,
          clientSecret,
          name: client.name,
          redirectUris: client.redirectUris,
          public: client.isPublic,
          firmId: client.firmId,
        },
        [
          `OAuth client ${client.name}`,
          `client_id:     ${client.clientId}`,
          clientSecret
            ? `client_secret: ${clientSecret}  (shown once)`
            : 'public client: no secret; PKCE protects its codes',
          `redirect URIs: ${client.redirectUris.join(' ')}`,
        ].join('\n'),
      );
      return 0;
    },
  },
  {
    name: ['oauth-client', 'revoke'],
    args: ['CLIENT_ID'],
    summary: 'revoke an OAuth client and every token it holds',
    async run({ args, database, io }) {
      const clientId = args[0] as string;
      if (!(await revokeOAuthClient(database.db, clientId))) throw new CliError(`no OAuth client ${clientId}`);
      io.out(`revoked ${clientId}`);
      return 0;
    },
  },
  {
    name: ['bank-feed', 'connect'],
    options: {
      ...json,
      org: { type: 'string' },
      'public-token': { type: 'string' },
      institution: { type: 'string' },
      account: { type: 'string', multiple: true },
    },
    synopsis: '--org ID --public-token TOKEN --institution NAME --account MASK=LEDGER_ACCOUNT_ID [...] [--json]',
    summary: 'connect a bank feed through the aggregator and run its first sync',
    help: 'Reads BANK_FEEDS, PLAID_CLIENT_ID, PLAID_SECRET, PLAID_BASE_URL and BANK_TOKEN_KEYS as the API does.',
    async run(run) {
      const { values, database } = run;
      const organizationId = uuid(values.org, '--org');
      const publicToken = values['public-token'];
      const institution = values.institution;
      const accounts = (values.account as string[] | undefined) ?? [];
      if (typeof publicToken !== 'string' || typeof institution !== 'string' || !accounts.length) {
        throw new UsageError('bank-feed connect needs --public-token, --institution and --account MASK=ID');
      }
      const links = accounts.map((a) => {
        const [mask, accountId] = a.split('=');
        if (!mask || !accountId) throw new UsageError(`--account ${a}: write MASK=LEDGER_ACCOUNT_ID`);
        return { mask, accountId: uuid(accountId, `--account ${a}`) };
      });
      const banking = requireBanking(run);
      const firmId = await firmOfOrganization(database, organizationId);
      const feed = await connectBankFeed(
        database.db,
        { firmId, actor: { kind: 'cli', id: 'operator' } },
        banking.aggregator,
        banking.tokenKeys,
        organizationId,
        { publicToken, institutionName: institution, accounts: links },
      );
      return syncAndPrint(run, organizationId, firmId, feed.id);
    },
  },
  {
    name: ['bank-feed', 'sync'],
    options: { ...json, org: { type: 'string' }, feed: { type: 'string' } },
    synopsis: '--org ID --feed ID [--json]',
    summary: 'sync a bank feed now',
    async run(run) {
      const organizationId = uuid(run.values.org, '--org');
      const feedId = uuid(run.values.feed, '--feed');
      requireBanking(run);
      return syncAndPrint(run, organizationId, await firmOfOrganization(run.database, organizationId), feedId);
    },
  },
  {
    name: ['audit', 'verify'],
    options: { ...json, firm: { type: 'string' } },
    synopsis: '[--firm ID] [--json]',
    summary: "check the agent audit trail's chains against their keys and anchors; names every bad event",
    help:
      "Each firm's chain is checked event by event (HMAC under the audit key each event names, or plain SHA-256 for\n" +
      "events written before the chain was keyed) and its end against the firm's anchor (AUDIT_ANCHOR_DIR).\n" +
      'Exit code 1 when any chain is broken: a cut tail (events missing after the last one left, up to the\n' +
      'anchor), an altered or forged event, a gap in the sequence, an event not linking to the one before, an\n' +
      "event or anchor signed with a key not in AUDIT_HMAC_KEYS, a finished close's stored evidence that no longer\n" +
      "matches the SHA-256 its event records. Each chain's head (number and hash) is printed:\n" +
      'kept elsewhere, it lets a later check see a cut tail even without the anchors.',
    async run({ values, database, io, audit }) {
      const firmId = values.firm === undefined ? undefined : uuid(values.firm, '--firm');
      if (!audit) throw new CliError('the audit keys are not configured (AUDIT_HMAC_KEYS)');
      const result = await verifyAuditChains(database.db, await audit(), {
        ...(firmId ? { firmId } : {}),
        evidence: CLOSE_EVIDENCE_HASHERS,
      });
      const summary = `${result.events} agent audit event${result.events === 1 ? '' : 's'} of ${result.firms} firm${
        result.firms === 1 ? '' : 's'
      }`;
      if (values.json) {
        io.out(JSON.stringify(result));
        return result.ok ? 0 : 1;
      }
      io.out(
        [`audit trail ${result.ok ? 'intact' : 'broken'}: ${summary}`, ...result.chains.map(describeChain)].join('\n'),
      );
      const lines = result.warnings.map((w) => `warning: ${w}`);
      if (!result.ok) {
        lines.push(`audit trail broken (${summary}):`);
        for (const chain of result.chains) {
          const listed = result.breaks.filter((b) => b.firmId === chain.firmId);
          lines.push(...listed.map((b) => `  firm ${b.firmId}: ${b.problem}`));
          if (chain.problems > listed.length) {
            lines.push(
              `  firm ${chain.firmId}: and ${chain.problems - listed.length} more problems (--json lists them)`,
            );
          }
        }
      }
      if (lines.length) io.err(lines.join('\n'));
      return result.ok ? 0 : 1;
    },
  },
  {
    name: ['attachments', 'move'],
    options: { ...json, company: { type: 'string' }, to: { type: 'string' } },
    synopsis: '--company ID --to postgres|s3 [--json]',
    summary: "move a company's attachment files to the Postgres or the S3 store",
    help:
      'Each file is copied to the other store, checked against its SHA-256, switched there, then removed from the ' +
      'store it was in. The S3 store is the one ATTACHMENTS_S3_* describe. A failure leaves that file where it was; ' +
      'run the command again to carry on.',
    async run({ values, database, print, settings }) {
      const id = uuid(values.company as string | undefined, '--company');
      const to = values.to;
      if (to !== 'postgres' && to !== 's3') throw new UsageError('--to must be postgres or s3');
      await requireCompany(database, id);
      let stores: AttachmentStores;
      try {
        stores = attachmentStoresFrom(database.db, { ATTACHMENTS_STORE: 'postgres', ...settings.attachments });
      } catch (err) {
        throw new CliError((err as Error).message);
      }
      if (!stores.byKind.s3)
        throw new CliError('the S3 store is not configured: set ATTACHMENTS_S3_BUCKET (and the rest)');
      try {
        const result = await moveCompanyFiles(database.db, stores, id, to);
        print(
          { companyId: id, to, ...result },
          `moved ${result.moved} file${result.moved === 1 ? '' : 's'} (${result.bytes} bytes) to ${to}` +
            (result.already > 0 ? `; ${result.already} already there` : ''),
        );
        return 0;
      } finally {
        stores.byKind.s3?.close?.();
      }
    },
  },
  {
    name: ['idempotency', 'purge'],
    summary: 'delete idempotency records past their retention window',
    async run({ database, io }) {
      const purged = await purgeExpiredIdempotencyKeys(database.db);
      io.out(`purged ${purged} expired idempotency record${purged === 1 ? '' : 's'}`);
      return 0;
    },
  },
];

const importLine = (i: ImportView, again: boolean) =>
  `import ${i.id}  ${i.kind} ${i.format}  ${i.status}` +
  (again ? ' (this file was imported before; nothing new was written)' : '') +
  `  rows ${i.doneRows}/${i.totalRows}` +
  (i.failedRows > 0 ? `, ${i.failedRows} refused` : '') +
  (i.kind === 'journal' ? `  entries ${i.entriesPosted}` : `  accounts ${i.accountsCreated}`) +
  (i.errorSummary && i.status === 'failed' ? `\n${i.errorSummary}` : '');

const errorLines = (errors: { line: number; column: string | null; message: string }[]) =>
  errors.map((e) => `  line ${e.line}${e.column ? `, ${e.column}` : ''}: ${e.message}`);

/**
 * Posts a queued import here and now, batch by batch, or (when a server's runner has claimed it) waits for it, with
 * a progress bar on a terminal. Returns the import as it ended.
 */
async function follow(
  database: Database,
  companyId: string,
  queued: ImportView,
  terminal: NodeJS.WriteStream | undefined,
): Promise<ImportView> {
  const bar = terminal
    ? new SingleBar({
        stream: terminal,
        format: 'importing [{bar}] {percentage}% | {value}/{total} rows | {speed} rows/s | ETA {eta}s',
        hideCursor: true,
      })
    : null;
  bar?.start(queued.totalRows, queued.doneRows, { speed: 0 });
  const started = Date.now();
  const show = (doneRows: number) =>
    bar?.update(doneRows, { speed: Math.round(doneRows / Math.max((Date.now() - started) / 1000, 0.001)) });
  try {
    const ran = await runNextImport(database.db, {
      workerId: importWorkerId(),
      importId: queued.id,
      onBatch: (p) => show(p.doneRows),
    });
    for (;;) {
      const now = await getImport(database.db, companyId, queued.id);
      show(now.doneRows);
      if (ran || now.status === 'completed' || now.status === 'failed') return now;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    bar?.stop();
  }
}

/** One line per chain: where keyed protection begins, its head (to keep elsewhere) and its anchor. */
function describeChain(c: ChainReport): string {
  const count = `${c.events} event${c.events === 1 ? '' : 's'}`;
  const keyed =
    c.keyedFrom === null
      ? c.events > 0
        ? 'plain SHA-256, not keyed yet'
        : null
      : c.keyedFrom > 1
        ? `plain SHA-256 up to event ${c.keyedFrom - 1}, HMAC-keyed from event ${c.keyedFrom}`
        : 'HMAC-keyed from event 1';
  const head = c.head ? `head event ${c.head.seq} ${c.head.hash}` : null;
  const anchor = c.anchor ? `anchored at event ${c.anchor.seq} (${c.anchor.writtenAt})` : 'no anchor';
  return `  firm ${c.firmId}: ${[count, keyed, head, anchor].filter(Boolean).join('; ')}`;
}

const synopsisOf = (c: Command) => [...c.name, ...(c.args ?? []), ...(c.synopsis ? [c.synopsis] : [])].join(' ');

export const USAGE = `usage: npm run cli -- <command> [options]

commands:
${COMMANDS.map((c) => `  ${synopsisOf(c)}\n      ${c.summary}`).join('\n')}

Every command takes --help. Exit codes: 0 done, 1 failed (one line on stderr says why;
company opening-balances then lists each bad row), 2 usage error.
environment: DATABASE_URL (Postgres), else the embedded database under DATA_DIR (default ./.data); while a server
owns that directory, commands run in the server. Bank feeds: BANK_FEEDS, PLAID_CLIENT_ID, PLAID_SECRET,
PLAID_BASE_URL, BANK_TOKEN_KEYS as for the API. Audit verification: AUDIT_HMAC_KEYS and AUDIT_ANCHOR_DIR as for the API.`;

function helpOf(c: Command): string {
  return [`usage: npm run cli -- ${synopsisOf(c)}`, '', c.summary, ...(c.help ? ['', c.help] : [])].join('\n');
}

/** What a command line asks for, decided without touching anything. */
export type Parsed =
  | { kind: 'help'; text: string }
  | { kind: 'usage'; message: string }
  | { kind: 'run'; command: Command; values: Values; args: string[] };

export function parseCommand(argv: string[]): Parsed {
  const [first] = argv;
  if (first === undefined) return { kind: 'usage', message: 'no command given' };
  if (first === 'help' || first === '--help' || first === '-h') {
    const topic = argv.slice(1).filter((a) => !a.startsWith('-'));
    const command = topic.length ? COMMANDS.find((c) => c.name.join(' ') === topic.join(' ')) : undefined;
    return { kind: 'help', text: command ? helpOf(command) : USAGE };
  }
  const command = COMMANDS.find((c) => c.name.every((word, i) => argv[i] === word));
  if (!command) {
    const group = COMMANDS.filter((c) => c.name.length > 1 && c.name[0] === first);
    if (group.length) {
      if (argv.slice(1).some((a) => a === '--help' || a === '-h')) {
        return { kind: 'help', text: group.map(helpOf).join('\n\n') };
      }
      const sub = argv[1];
      return {
        kind: 'usage',
        message: `${sub === undefined ? `${first} needs a command` : `unknown ${first} command: ${sub}`}: ${group.map((c) => c.name[1]).join(', ')}`,
      };
    }
    return { kind: 'usage', message: `unknown command: ${first}` };
  }
  const rest = argv.slice(command.name.length);
  if (rest.some((a) => a === '--help' || a === '-h')) return { kind: 'help', text: helpOf(command) };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: rest, options: command.options ?? {}, allowPositionals: true, strict: true });
  } catch (err) {
    return { kind: 'usage', message: `${command.name.join(' ')}: ${(err as Error).message}` };
  }
  const wanted = command.args ?? [];
  if (parsed.positionals.length !== wanted.length) {
    const message =
      parsed.positionals.length < wanted.length
        ? `${command.name.join(' ')} needs ${wanted.slice(parsed.positionals.length).join(' ')}`
        : `${command.name.join(' ')}: unexpected argument ${parsed.positionals[wanted.length]}`;
    return { kind: 'usage', message };
  }
  return { kind: 'run', command, values: parsed.values as Values, args: parsed.positionals };
}

/** The command line with each `--file` path made absolute against `cwd`. */
export function withAbsoluteFiles(argv: readonly string[], cwd: string): string[] {
  const absolute = (path: string) => (path === '' || isAbsolute(path) ? path : resolve(cwd, path));
  return argv.map((arg, i) => {
    if (arg.startsWith('--file=')) return `--file=${absolute(arg.slice('--file='.length))}`;
    return argv[i - 1] === '--file' ? absolute(arg) : arg;
  });
}

/** True when this command line reads standard input (its command's stdin option is given). */
export function readsStdin(parsed: Parsed): boolean {
  return parsed.kind === 'run' && Boolean(parsed.command.stdinOption && parsed.values[parsed.command.stdinOption]);
}

/**
 * Runs one CLI command line. `database` is opened only for a command that runs (never for help or a usage error).
 * Returns the exit code: 0 done, 1 failed, 2 usage error.
 */
export async function runCli(
  argv: string[],
  database: Database | (() => Database),
  io: Io,
  banking?: BankingDeps | string,
  qbo: QboConfig | null = null,
  audit?: () => Promise<AuditTrail>,
  settings: CliSettings = DEFAULT_CLI_SETTINGS,
): Promise<number> {
  const parsed = parseCommand(argv);
  if (parsed.kind === 'help') {
    io.out(parsed.text);
    return 0;
  }
  if (parsed.kind === 'usage') {
    io.err(`${parsed.message}\n\n${USAGE}`);
    return 2;
  }
  const { command, values, args } = parsed;
  try {
    const db = typeof database === 'function' ? database() : database;
    const print = (value: unknown, human: string) => io.out(values.json ? JSON.stringify(value) : human);
    return await command.run({ values, args, database: db, io, print, banking, qbo, audit, settings });
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\n\n${helpOf(command)}`);
      return 2;
    }
    io.err(`error: ${describeFailure(err)}`);
    return 1;
  }
}

/**
 * One line about a failure, fit for a terminal and a log: never a stack, never the failed SQL or its parameters
 * (they can hold a new key's hash).
 */
export function describeFailure(err: unknown): string {
  if (err instanceof CliError) return err.message;
  if (isDomainError(err)) return `${err.code}: ${err.message}`;
  if (isConnectionLost(err)) {
    const cause = innermost(err) as NodeJS.ErrnoException & { hostname?: string };
    const why = cause.code ? `${cause.code}${cause.hostname ? ` ${cause.hostname}` : ''}` : cause.message;
    return `cannot reach the database (${why}); check DATABASE_URL and that the server is running`;
  }
  const pg = pgErrorOf(err);
  if (pg) {
    if (pg.code === '42P01') return 'the database is not migrated: run `npm run cli -- migrate`';
    return `the database refused the change (${pg.code}): ${pg.message}`;
  }
  return String((innermost(err) as Error).message ?? err).split('\n')[0] as string;
}

function innermost(err: unknown): unknown {
  let current = err;
  for (let depth = 0; depth < 5; depth++) {
    const cause = (current as { cause?: unknown })?.cause;
    if (!cause) break;
    current = cause;
  }
  return current;
}
