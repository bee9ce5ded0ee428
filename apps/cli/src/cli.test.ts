import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { EVIDENCE_FILES, manifestSha256 } from '@firm/close';
import { newId } from '@firm/core';
import {
  accounts,
  acctClients,
  agentAuditEvents,
  apiKeys,
  auditEvents,
  closeEvidence,
  closes,
  firms,
  organizations,
  users,
} from '@firm/db';
import { type AuditTrail, appendAuditEvent, openAuditTrail } from '@firm/gateway';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { acceptInvitation, authenticateApiKey, verifyLogin } from '@firm/identity';
import { and, count, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USAGE, parseCommand, runCli, withAbsoluteFiles } from './main';

let database: TestDatabase;
let auditDir: string;
let trail: AuditTrail;
beforeAll(async () => {
  database = await createTestDatabase();
  auditDir = await mkdtemp(join(tmpdir(), 'cli-audit-'));
  trail = await openAuditTrail({
    keys: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
    dataDir: auditDir,
    production: false,
  });
});
afterAll(async () => {
  await database.close();
  await rm(auditDir, { recursive: true, force: true });
});

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
  const code = await runCli(argv, database, io, undefined, null, async () => trail);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function counts() {
  const n = async (table: typeof firms | typeof users | typeof organizations | typeof accounts | typeof apiKeys) =>
    (await database.db.select({ n: count() }).from(table))[0]?.n;
  return {
    firms: await n(firms),
    users: await n(users),
    organizations: await n(organizations),
    accounts: await n(accounts),
    apiKeys: await n(apiKeys),
  };
}

describe('seed', () => {
  it('creates the demo firm once; a second run mints nothing, --new-key a fresh key', async () => {
    const first = await cli('seed', '--empty', '--json');
    expect(first.code).toBe(0);
    const seeded = JSON.parse(first.out);
    expect(seeded).toMatchObject({
      created: true,
      firmId: expect.any(String),
      apiKey: expect.stringMatching(/^dk_live_/),
      user: { email: expect.any(String), password: expect.any(String) },
    });
    expect(seeded.organizations).toHaveLength(2);
    // --empty: the books stay empty.
    expect(seeded.history).toEqual({});
    const entries = (await database.db.execute(sql`select 1 from journal_entries limit 1`)) as unknown as {
      rows: unknown[];
    };
    expect(entries.rows).toEqual([]);
    const after1 = await counts();
    expect(after1).toMatchObject({ firms: 1, users: 1, organizations: 2, apiKeys: 1 });

    const second = await cli('seed', '--json');
    expect(second.code).toBe(0);
    expect(JSON.parse(second.out)).toEqual({
      created: false,
      firmId: seeded.firmId,
      apiKey: null,
      apiKeyId: null,
      organizations: seeded.organizations,
      user: { email: seeded.user.email, password: null },
    });
    expect(await counts()).toEqual(after1);
    expect((await cli('seed')).out).toMatch(/nothing was created/);
    expect(await counts()).toEqual(after1);

    const fresh = JSON.parse((await cli('seed', '--new-key', '--json')).out);
    expect(fresh.apiKey).toMatch(/^dk_live_/);
    expect(await counts()).toEqual({ ...after1, apiKeys: 2 });
    expect(await authenticateApiKey(database.db, fresh.apiKey)).not.toBeNull();
    expect(await authenticateApiKey(database.db, seeded.apiKey)).not.toBeNull();
  });
});

describe('api-key', () => {
  it('creates a narrowed key and revokes it', async () => {
    const seeded = JSON.parse((await cli('seed', '--json')).out);
    const org = seeded.organizations[0].id;
    const created = await cli(
      'api-key',
      'create',
      '--firm',
      seeded.firmId,
      '--org',
      org,
      '--scope',
      'accounts:read',
      '--json',
    );
    expect(created.code).toBe(0);
    const key = JSON.parse(created.out);
    expect(key).toMatchObject({ scopes: ['accounts:read'], organizationIds: [org] });
    const credential = await authenticateApiKey(database.db, key.apiKey);
    expect([...(credential?.scopes ?? [])]).toEqual(['accounts:read']);

    const revoked = await cli('api-key', 'revoke', key.id);
    expect(revoked.code).toBe(0);
    expect(await authenticateApiKey(database.db, key.apiKey)).toBeNull();
  });

  it('refuses unknown scopes, foreign organizations and missing arguments without writing', async () => {
    const seeded = JSON.parse((await cli('seed', '--json')).out);
    const before = await counts();
    const badScope = await cli('api-key', 'create', '--firm', seeded.firmId, '--scope', 'everything:all');
    expect(badScope.code).toBe(1);
    expect(badScope.err).toMatch(/unknown scope/);
    const badOrg = await cli(
      'api-key',
      'create',
      '--firm',
      seeded.firmId,
      '--org',
      '00000000-0000-4000-8000-000000000000',
    );
    expect(badOrg.code).toBe(1);
    expect((await cli('api-key', 'create')).code).toBe(2);
    expect((await cli('api-key', 'revoke', 'nope')).code).toBe(2);
    expect((await cli('api-key', 'revoke', '00000000-0000-4000-8000-000000000000')).code).toBe(1);
    expect((await cli('frobnicate')).code).toBe(2);
    expect(await counts()).toEqual(before);
  });
});

/** Every command line the CLI knows, as its words. */
const COMMAND_LINES = [
  ['migrate'],
  ['seed'],
  ['firm', 'create'],
  ['company', 'create'],
  ['company', 'list'],
  ['company', 'archive'],
  ['company', 'unarchive'],
  ['company', 'opening-balances'],
  ['user', 'create'],
  ['user', 'list'],
  ['api-key', 'create'],
  ['api-key', 'revoke'],
  ['oauth-client', 'create'],
  ['oauth-client', 'revoke'],
  ['bank-feed', 'connect'],
  ['bank-feed', 'sync'],
  ['audit', 'verify'],
  ['idempotency', 'purge'],
];

describe('help and usage', () => {
  const untouchable = () => {
    throw new Error('the database was opened');
  };
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, untouchable, { out: (t) => out.push(t), err: (t) => err.push(t) });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('lists every command', () => {
    for (const words of COMMAND_LINES) expect(USAGE).toContain(`  ${words.join(' ')}`);
    for (const words of COMMAND_LINES) expect(parseCommand([...words, '--help']).kind).toBe('help');
  });

  it('prints help for --help on every command, and touches nothing', async () => {
    for (const words of COMMAND_LINES) {
      for (const flag of ['--help', '-h']) {
        const res = await run(...words, flag);
        expect(res.code, words.join(' ')).toBe(0);
        expect(res.out).toMatch(new RegExp(`^usage: npm run cli -- ${words.join(' ')}`));
      }
    }
    for (const argv of [['--help'], ['help'], ['-h'], ['help', 'user', 'create'], ['api-key', '--help']]) {
      const res = await run(...argv);
      expect(res.code, argv.join(' ')).toBe(0);
      expect(res.out).toMatch(/^usage:/);
    }
    expect((await run('help', 'user', 'create')).out).toMatch(/--password-stdin/);
  });

  it('exits 2 with usage for no command, unknown commands, unknown options and missing arguments', async () => {
    for (const argv of [
      [],
      ['frobnicate'],
      ['api-key'],
      ['api-key', 'rotate'],
      ['migrate', '--force'],
      ['migrate', 'extra'],
      ['api-key', 'revoke'],
      ['seed', '--json=maybe'],
    ]) {
      const res = await run(...argv);
      expect(res.code, argv.join(' ')).toBe(2);
      expect(res.err).toMatch(/usage: npm run cli/);
      expect(res.out).toBe('');
    }
    expect((await run()).err).toContain(USAGE);
  });
});

describe('operational errors', () => {
  it('are one line, exit 1, and never show SQL, a stack, a key or its hash', async () => {
    const seeded = JSON.parse((await cli('seed', '--json')).out);
    const before = await counts();
    for (const argv of [
      ['api-key', 'create', '--firm', '00000000-0000-4000-8000-000000000000'],
      [
        'oauth-client',
        'create',
        '--name',
        'x',
        '--redirect-uri',
        'https://x.test/cb',
        '--firm',
        '00000000-0000-4000-8000-000000000000',
      ],
      ['user', 'list', '--firm', '00000000-0000-4000-8000-000000000000'],
      ['firm', 'create', '--name', 'Demo', '--slug', 'demo'],
      ['user', 'create', '--firm', seeded.firmId, '--email', 'OWNER@demo-firm.test', '--role', 'member'],
      ['user', 'create', '--firm', seeded.firmId, '--email', 'not-an-email', '--role', 'member'],
    ]) {
      const res = await cli(...argv);
      expect(res.code, argv.join(' ')).toBe(1);
      expect(res.err.split('\n'), argv.join(' ')).toHaveLength(1);
      expect(res.err).toMatch(/^error: /);
      expect(res.err).not.toMatch(/insert|select|params|dk_live_|key_hash|\bat \//i);
      expect(res.out).toBe('');
    }
    expect(await counts()).toEqual(before);
  });
});

describe('companies', () => {
  it('creates a firm’s companies, lists them, archives and unarchives one', async () => {
    const firm = JSON.parse((await cli('firm', 'create', '--name', 'Ledgerline Partners', '--json')).out);
    const created = await cli(
      ...['company', 'create', '--firm', firm.id, '--name', 'Juniper Florals', '--legal-name', 'Juniper Florals LLC'],
      ...['--tax-id', '98-7654321', '--currency', 'CAD', '--fiscal-year-start-month', '10', '--json'],
    );
    expect(created.code, created.err).toBe(0);
    const juniper = JSON.parse(created.out);
    expect(juniper).toMatchObject({
      name: 'Juniper Florals',
      legalName: 'Juniper Florals LLC',
      taxId: '98-7654321',
      currency: 'CAD',
      fiscalYearStartMonth: 10,
      status: 'active',
    });
    const chartOf = async (id: string) =>
      (await database.db.select().from(accounts).where(eq(accounts.organizationId, id))).length;
    expect(await chartOf(juniper.id)).toBeGreaterThan(20);
    const empty = await cli('company', 'create', '--firm', firm.id, '--name', 'Blank Books', '--chart', 'empty');
    expect(empty.code, empty.err).toBe(0);
    expect(empty.out).toMatch(/^company \S+ {2}Blank Books {2}USD {2}fiscal year from month 1$/);
    const blankId = empty.out.split(/\s+/)[1] as string;
    expect(await chartOf(blankId)).toBe(0);
    const [client] = await database.db.select().from(acctClients).where(eq(acctClients.organizationId, juniper.id));
    expect(client?.agentAccess).toBe('none');

    const names = async (...extra: string[]) =>
      JSON.parse((await cli('company', 'list', '--firm', firm.id, ...extra, '--json')).out).map(
        (c: { name: string }) => c.name,
      );
    expect(await names()).toEqual(['Blank Books', 'Juniper Florals']);

    const archived = await cli('company', 'archive', juniper.id);
    expect(archived.code, archived.err).toBe(0);
    expect(archived.out).toMatch(/Juniper Florals .*\(archived \d{4}-/);
    expect(await names()).toEqual(['Blank Books']);
    expect(await names('--status', 'archived')).toEqual(['Juniper Florals']);
    expect(await names('--status', 'all')).toEqual(['Blank Books', 'Juniper Florals']);
    const back = JSON.parse((await cli('company', 'unarchive', juniper.id, '--json')).out);
    expect(back).toMatchObject({ id: juniper.id, status: 'active', archivedAt: null });
    expect((await cli('company', 'list', '--firm', firm.id)).out.split('\n')).toHaveLength(2);
  });

  it('refuses bad input: usage errors exit 2, refusals exit 1 in one line, and nothing is written', async () => {
    const firm = JSON.parse((await cli('firm', 'create', '--name', 'Strict Books', '--json')).out);
    await cli('company', 'create', '--firm', firm.id, '--name', 'Taken Name');
    const before = await counts();
    for (const argv of [
      ['company', 'create', '--firm', firm.id],
      ['company', 'create', '--firm', 'nope', '--name', 'X'],
      ['company', 'create', '--firm', firm.id, '--name', 'X', '--chart', 'fancy'],
      ['company', 'create', '--firm', firm.id, '--name', 'X', '--fiscal-year-start-month', '13'],
      ['company', 'list', '--firm', firm.id, '--status', 'gone'],
      ['company', 'archive'],
      ['company', 'archive', 'not-a-uuid'],
    ]) {
      expect((await cli(...argv)).code, argv.join(' ')).toBe(2);
    }
    for (const [argv, message] of [
      [['company', 'create', '--firm', firm.id, '--name', 'Taken Name'], /^error: COMPANY_NAME_TAKEN: /],
      [['company', 'create', '--firm', firm.id, '--name', 'X', '--currency', 'XYZ'], /^error: VALIDATION_ERROR: /],
      [['company', 'create', '--firm', firm.id, '--name', '   '], /^error: VALIDATION_ERROR: /],
      [['company', 'create', '--firm', '00000000-0000-4000-8000-000000000000', '--name', 'X'], /^error: no firm /],
      [['company', 'archive', '00000000-0000-4000-8000-000000000000'], /^error: no organization /],
    ] as const) {
      const res = await cli(...argv);
      expect(res.code, argv.join(' ')).toBe(1);
      expect(res.err).toMatch(message);
      expect(res.err.split('\n')).toHaveLength(1);
    }
    expect(await counts()).toEqual(before);
  });
});

describe('opening balances', () => {
  it('posts a CSV file as the opening entry, lists every bad row, and refuses a second without --replace', async () => {
    const firm = JSON.parse((await cli('firm', 'create', '--name', 'Opening Books', '--json')).out);
    const company = JSON.parse((await cli('company', 'create', '--firm', firm.id, '--name', 'Fresh', '--json')).out);
    const dir = await mkdtemp(join(tmpdir(), 'cli-opening-'));
    try {
      const file = join(dir, 'balances.csv');
      await writeFile(file, 'code,name,debit,credit\n1000,,1200.00,\n1990,Till,80,\n2000,,,500.00\n');
      const args = ['company', 'opening-balances', '--company', company.id, '--file', file, '--date', '2026-01-01'];
      const refused = await cli(...args);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/^error: OPENING_BALANCES_INVALID: .*row 3, code: no account has the code 1990/);

      const posted = await cli(...args, '--create-missing', '--close-books-before');
      expect(posted.code, posted.err).toBe(0);
      expect(posted.out.split('\n')).toEqual([
        expect.stringMatching(/^entry \S+ {2}2026-01-01 {2}4 lines {2}total 1280\.00$/),
        'accounts created: 1990 (asset), 3050 (equity)',
        'difference 780.00 credit to 3050 Opening balance equity',
        'books closed through 2025-12-31',
      ]);
      const again = await cli(...args, '--date', '2026-02-01');
      expect(again.code).toBe(1);
      expect(again.err).toMatch(/^error: OPENING_BALANCES_EXIST: /);
      const replaced = JSON.parse((await cli(...args, '--date', '2026-02-01', '--replace', '--json')).out);
      expect(replaced.replacedEntryId).toEqual(expect.any(String));

      await writeFile(file, 'code,debit,credit\nNOPE,1,\n1000,-1,\n1000,2,\n');
      const bad = await cli(...args, '--date', '2026-03-01', '--replace', '--create-missing');
      expect(bad.code).toBe(1);
      expect(bad.err.split('\n')).toEqual([
        'error: OPENING_BALANCES_INVALID: the opening balances cannot be posted: 3 problems, see details',
        expect.stringMatching(/^ {2}row 2, code: account NOPE does not exist and its type cannot be told/),
        expect.stringMatching(/^ {2}row 3, debit: must not be negative/),
        '  row 4, code: account 1000 is already on row 3',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    for (const argv of [
      ['company', 'opening-balances', '--company', company.id, '--date', '2026-01-01'],
      ['company', 'opening-balances', '--company', 'nope', '--file', 'x.csv', '--date', '2026-01-01'],
      ['company', 'opening-balances', '--company', company.id, '--file', 'x.csv'],
    ]) {
      expect((await cli(...argv)).code, argv.join(' ')).toBe(2);
    }
    const missing = await cli(
      ...[
        'company',
        'opening-balances',
        '--company',
        company.id,
        '--file',
        '/nonexistent/x.csv',
        '--date',
        '2026-01-01',
      ],
    );
    expect(missing.code).toBe(1);
    expect(missing.err).toBe('error: cannot read /nonexistent/x.csv: ENOENT');
  });

  it('makes --file paths absolute, so a command forwarded to the server reads the file named', () => {
    expect(withAbsoluteFiles(['a', '--file', 'b.csv', '--file=c.csv', '--file', '/d.csv'], '/w')).toEqual([
      'a',
      '--file',
      '/w/b.csv',
      '--file=/w/c.csv',
      '--file',
      '/d.csv',
    ]);
  });
});

describe('firms and users', () => {
  it('creates a firm and its users, who can sign in, and lists them', async () => {
    const firm = await cli('firm', 'create', '--name', 'Harbor & Pine Bookkeeping', '--json');
    expect(firm.code).toBe(0);
    const created = JSON.parse(firm.out);
    expect(created).toMatchObject({ name: 'Harbor & Pine Bookkeeping', slug: 'harbor-pine-bookkeeping' });

    const out: string[] = [];
    const code = await runCli(
      [
        'user',
        'create',
        '--firm',
        created.id,
        '--email',
        'Pat@Harbor.test',
        '--role',
        'owner',
        '--password-stdin',
        '--json',
      ],
      database,
      { out: (t) => out.push(t), err: () => {}, stdin: async () => 'a long enough passphrase\n' },
    );
    expect(code).toBe(0);
    const owner = JSON.parse(out.join(''));
    expect(owner).toMatchObject({ email: 'pat@harbor.test', role: 'owner', password: null });
    expect(await verifyLogin(database.db, 'pat@harbor.test', 'a long enough passphrase')).toMatchObject({
      id: owner.id,
      role: 'owner',
    });

    const member = JSON.parse(
      (await cli('user', 'create', '--firm', created.id, '--email', 'sam@harbor.test', '--role', 'member', '--json'))
        .out,
    );
    expect(member.password).toMatch(/^[a-z2-9]{5}(-[a-z2-9]{5}){3}$/);
    expect(await verifyLogin(database.db, 'sam@harbor.test', member.password)).not.toBeNull();

    const listed = JSON.parse((await cli('user', 'list', '--firm', created.id, '--json')).out);
    expect(listed.map((u: { email: string; role: string }) => [u.email, u.role])).toEqual([
      ['pat@harbor.test', 'owner'],
      ['sam@harbor.test', 'member'],
    ]);
    expect(JSON.stringify(listed)).not.toMatch(/scrypt|password/i);
  });

  it('invites a user with a single-use link printed once, and deactivates them; both audited', async () => {
    const firm = JSON.parse((await cli('firm', 'create', '--name', 'Invite & Co', '--json')).out);
    const [org] = await database.db
      .insert(organizations)
      .values({ firmId: firm.id, name: 'Invite client' })
      .returning();
    const settings = { publicOrigin: 'https://books.example', invitationTtlHours: 24 };
    const run = async (...argv: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(
        argv,
        database,
        { out: (t) => out.push(t), err: (t) => err.push(t) },
        undefined,
        null,
        undefined,
        settings,
      );
      return { code, out: out.join('\n'), err: err.join('\n') };
    };
    const invited = await run(
      'user',
      'invite',
      '--firm',
      firm.id,
      '--email',
      'Lee@Invite.test',
      '--role',
      'member',
      '--org',
      org?.id as string,
      '--json',
    );
    expect(invited.code, invited.err).toBe(0);
    const user = JSON.parse(invited.out);
    expect(user).toMatchObject({
      email: 'lee@invite.test',
      role: 'member',
      status: 'invited',
      organizationIds: [org?.id],
    });
    expect(user.invitation.url).toMatch(/^https:\/\/books\.example\/invite\/inv_/);
    expect(Date.parse(user.invitation.expiresAt) - Date.now()).toBeLessThanOrEqual(24 * 3_600_000);
    const token = user.invitation.url.split('/').pop();
    expect(await acceptInvitation(database.db, token, 'a long enough passphrase')).toMatchObject({ state: 'accepted' });
    expect(await acceptInvitation(database.db, token, 'another long passphrase')).toEqual({ state: 'used' });
    // Without PUBLIC_ORIGIN the link is printed as a path.
    const pathOnly = await cli('user', 'invite', '--firm', firm.id, '--email', 'max@invite.test', '--role', 'admin');
    expect(pathOnly.out).toMatch(/^\/invite\/inv_\S+ {3}\(on the server's address/m);

    expect((await run('user', 'deactivate', user.id)).out).toBe(`deactivated ${user.id}`);
    expect(await verifyLogin(database.db, 'lee@invite.test', 'a long enough passphrase')).toBeNull();
    expect((await run('user', 'deactivate', user.id)).out).toBe(`${user.id} was already deactivated`);
    const listed = (await cli('user', 'list', '--firm', firm.id)).out;
    expect(listed).toMatch(/member {2}deactivated {2}lee@invite\.test/);
    expect(listed).toMatch(/admin {3}invited {6}max@invite\.test/);
    const events = await database.db
      .select({ action: auditEvents.action, actorKind: auditEvents.actorKind })
      .from(auditEvents)
      .where(eq(auditEvents.resourceId, user.id));
    expect(events).toEqual([
      { action: 'user.invited', actorKind: 'cli' },
      { action: 'user.joined', actorKind: 'invitation' },
      { action: 'user.deactivated', actorKind: 'cli' },
    ]);
    const unknown = await cli('user', 'deactivate', '0190aaaa-0000-7000-8000-000000000000');
    expect(unknown).toMatchObject({ code: 1, err: 'error: no user 0190aaaa-0000-7000-8000-000000000000' });
  });

  it('refuses a bad role, a short password and a missing email without writing', async () => {
    const firm = JSON.parse((await cli('firm', 'create', '--name', 'Refusals LLP', '--json')).out);
    const before = await counts();
    expect((await cli('user', 'create', '--firm', firm.id, '--email', 'a@b.test', '--role', 'boss')).code).toBe(2);
    expect((await cli('user', 'create', '--firm', firm.id, '--role', 'member')).code).toBe(2);
    expect((await cli('user', 'create', '--firm', 'nope', '--email', 'a@b.test', '--role', 'member')).code).toBe(2);
    const short = await runCli(
      ['user', 'create', '--firm', firm.id, '--email', 'a@b.test', '--role', 'member', '--password-stdin'],
      database,
      { out: () => {}, err: () => {}, stdin: async () => 'short\n' },
    );
    expect(short).toBe(1);
    expect((await cli('firm', 'create')).code).toBe(2);
    expect((await cli('firm', 'create', '--name', '   ')).code).toBe(1);
    expect(await counts()).toEqual(before);
  });
});

describe('the real command', () => {
  // The command as the image ships it (dist/cli.js), built once here: a start through tsx compiles the whole tree
  // again every time. `npm run cli` (through tsx) is run once below.
  const root = join(import.meta.dirname, '..', '..', '..');
  const source = join(import.meta.dirname, 'bin.ts');
  let buildDir: string;
  let bin: string;
  beforeAll(async () => {
    await mkdir(join(root, 'node_modules', '.cache'), { recursive: true });
    buildDir = await mkdtemp(join(root, 'node_modules', '.cache', 'cli-test-'));
    await promisify(execFile)(process.execPath, [join(root, 'scripts', 'build.mjs')], {
      cwd: root,
      env: { ...process.env, BUILD_OUTDIR: buildDir, BUILD_ENTRIES: 'cli' },
    });
    bin = join(buildDir, 'cli.js');
  }, 120_000);
  afterAll(() => rm(buildDir, { recursive: true, force: true }));
  const exec = async (env: Record<string, string>, ...argv: string[]) => {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...argv], {
        env: { ...process.env, ...env },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  it('creates nothing for help or a usage error', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'cli-help-'));
    const dataDir = join(parent, 'data');
    try {
      for (const argv of [['--help'], ['migrate', '--help'], ['idempotency', 'purge', '--help'], ['seed', '-h']]) {
        expect((await exec({ DATABASE_URL: '', DATA_DIR: dataDir }, ...argv)).code).toBe(0);
      }
      // `npm run cli`: the sources through tsx.
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', source, 'seed', '--help'], {
        env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir },
      });
      expect(stdout).toMatch(/seed/);
      expect((await exec({ DATABASE_URL: '', DATA_DIR: dataDir })).code).toBe(2);
      expect((await exec({ DATABASE_URL: '', DATA_DIR: dataDir }, 'migrate', '--nope')).code).toBe(2);
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  }, 60_000);

  it('says in one line when DATABASE_URL is wrong', async () => {
    const unreachable = await exec({ DATABASE_URL: 'postgres://u@base.invalid/db' }, 'migrate');
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr.trim()).toMatch(/^error: cannot reach the database \(ENOTFOUND base\.invalid\)/);
    expect(unreachable.stderr.trim().split('\n')).toHaveLength(1);
    const malformed = await exec({ DATABASE_URL: 'base' }, 'migrate');
    expect(malformed.code).toBe(1);
    expect(malformed.stderr.trim()).toBe('error: DATABASE_URL is not a postgres:// URL');
  }, 60_000);

  it('prints only JSON on stdout with --json, and reads a password from standard input', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cli-stdin-'));
    try {
      // With --json, stdout is the JSON alone: no log line, no progress. (The demo's year of books, which --empty
      // leaves out, is npm start's: server.test.ts.)
      const seeded = JSON.parse(
        (await exec({ DATABASE_URL: '', DATA_DIR: dataDir }, 'seed', '--empty', '--json')).stdout,
      );
      expect(seeded.apiKey).toMatch(/^dk_live_/);
      expect(seeded.organizations).toHaveLength(2);
      const child = execFile(
        process.execPath,
        [bin, 'user', 'create', '--firm', seeded.firmId, '--email', 'kim@demo.test'],
        { env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir } },
      );
      // Without --role the command is refused before anything is read or opened.
      const [code] = (await once(child, 'exit')) as [number];
      expect(code).toBe(2);
      const created = promisify(execFile)(
        process.execPath,
        [
          bin,
          'user',
          'create',
          '--firm',
          seeded.firmId,
          '--email',
          'kim@demo.test',
          '--role',
          'admin',
          '--password-stdin',
          '--json',
        ],
        { env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir } },
      );
      created.child.stdin?.end('typed on stdin, not argv\n');
      const user = JSON.parse((await created).stdout);
      expect(user).toMatchObject({ email: 'kim@demo.test', role: 'admin', password: null });
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('bank-feed', () => {
  it('connects a feed through the sandbox aggregator and syncs it', async () => {
    const { startSandboxAggregator } = await import('@firm/banking/sandbox/server');
    const { PlaidAggregator, parseTokenKeys } = await import('@firm/banking');
    const client = { clientId: 'cli-client', secret: 'cli-secret' };
    const sandbox = await startSandboxAggregator(client);
    try {
      const banking = {
        aggregator: new PlaidAggregator({ ...client, basePath: sandbox.url }),
        tokenKeys: parseTokenKeys(`k:${Buffer.alloc(32, 3).toString('base64')}`),
      };
      const seeded = JSON.parse((await cli('seed', '--json')).out);
      const org = seeded.organizations[0].id;
      const [checking] = (
        (await database.db.execute(
          sql`select id from accounts where organization_id = ${org} and code = '1000'`,
        )) as unknown as { rows: { id: string }[] }
      ).rows;
      const token = (await (
        await fetch(`${sandbox.url}/sandbox/public_token/create`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: client.clientId, secret: client.secret }),
        })
      ).json()) as { public_token: string };
      const out: string[] = [];
      const code = await runCli(
        [
          'bank-feed',
          'connect',
          '--org',
          org,
          '--public-token',
          token.public_token,
          '--institution',
          'First Platypus Bank',
          '--account',
          `0000=${checking?.id}`,
          '--json',
        ],
        database,
        { out: (t) => out.push(t), err: (t) => out.push(t) },
        banking,
      );
      expect(code, out.join('\n')).toBe(0);
      const result = JSON.parse(out.join(''));
      expect(result.added).toBeGreaterThan(0);
      const rows = (await database.db.execute(
        sql`select count(*)::int as n from bank_transactions where organization_id = ${org}`,
      )) as unknown as { rows: { n: number }[] };
      expect(rows.rows[0]?.n).toBe(12);
      const again = await runCli(
        ['bank-feed', 'sync', '--org', org, '--feed', result.feedId, '--json'],
        database,
        { out: () => undefined, err: () => undefined },
        banking,
      );
      expect(again).toBe(0);
      const after = (await database.db.execute(
        sql`select count(*)::int as n from bank_transactions where organization_id = ${org}`,
      )) as unknown as { rows: { n: number }[] };
      expect(after.rows[0]?.n).toBe(12);
    } finally {
      await sandbox.close();
    }
  });
});

describe('audit verify', () => {
  async function auditedFirm(slug: string, operations: string[]) {
    const [firm] = await database.db.insert(firms).values({ slug, name: slug }).returning();
    const firmId = firm?.id as string;
    for (const operation of operations) {
      await appendAuditEvent(database.db, trail, {
        firmId,
        organizationId: null,
        actorKind: 'oauth_token',
        actorId: 'family-1',
        actorName: null,
        operation,
        entityType: 'Invoice',
        entityId: null,
        outcome: 'succeeded',
        statusCode: 200,
        errorCode: null,
        requestId: null,
        dryRun: false,
        syncTokenBefore: null,
        syncTokenAfter: null,
      });
    }
    return firmId;
  }

  it('passes on an intact chain and names an edited or deleted event', async () => {
    const firmId = await auditedFirm('audited', [
      'clients.list',
      'transactions.create',
      'transactions.update',
      'transactions.read',
    ]);
    const ok = await cli('audit', 'verify', '--firm', firmId);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('audit trail intact: 4 agent audit events');
    expect(ok.out).toMatch(
      new RegExp(`firm ${firmId}: 4 events; HMAC-keyed from event 1; head event 4 [0-9a-f]{64}; anchored at event 4`),
    );

    const at = (seq: number) => and(eq(agentAuditEvents.firmId, firmId), eq(agentAuditEvents.seq, seq));
    await database.db.update(agentAuditEvents).set({ outcome: 'refused' }).where(at(2));
    const edited = await cli('audit', 'verify', '--firm', firmId);
    expect(edited.code).toBe(1);
    expect(edited.err).toMatch(/event 2 \(.+\) does not match its HMAC under audit key k1: it was altered or forged/);
    const json = await cli('audit', 'verify', '--firm', firmId, '--json');
    expect(JSON.parse(json.out).breaks[0]).toMatchObject({ firmId, seq: 2, kind: 'altered' });
    await database.db.update(agentAuditEvents).set({ outcome: 'succeeded' }).where(at(2));
    expect((await cli('audit', 'verify', '--firm', firmId)).code).toBe(0);

    await database.db.delete(agentAuditEvents).where(at(3));
    const deleted = await cli('audit', 'verify');
    expect(deleted.code).toBe(1);
    expect(deleted.err).toContain(`firm ${firmId}: gap: event 3 missing`);
  });

  it('reports a cut tail, naming the missing events, after the last five events were deleted in SQL', async () => {
    const firmId = await auditedFirm(
      'audited-tail',
      Array.from({ length: 10 }, (_, i) => `op.${i + 1}`),
    );
    expect((await cli('audit', 'verify', '--firm', firmId)).code).toBe(0);
    await database.db.execute(sql`delete from agent_audit_events where firm_id = ${firmId} and seq > 5`);

    const cut = await cli('audit', 'verify', '--firm', firmId);
    expect(cut.code).toBe(1);
    expect(cut.out).toContain('audit trail broken: 5 agent audit events of 1 firm');
    expect(cut.err).toMatch(
      new RegExp(`firm ${firmId}: tail cut: events 6\\.\\.10 missing \\(the anchor written at .+ records event 10\\)`),
    );
    const json = JSON.parse((await cli('audit', 'verify', '--firm', firmId, '--json')).out);
    expect(json).toMatchObject({
      ok: false,
      breaks: [{ firmId, seq: 6, kind: 'tail_cut' }],
      chains: [{ firmId, events: 5, head: { seq: 5 }, anchor: { seq: 10 }, keyedFrom: 1 }],
    });
  });

  it("hashes a finished close's stored evidence again and names the close when it was altered", async () => {
    const [firm] = await database.db.insert(firms).values({ slug: 'closing', name: 'closing' }).returning();
    const firmId = firm?.id as string;
    const [org] = await database.db.insert(organizations).values({ firmId, name: 'closing client' }).returning();
    const organizationId = org?.id as string;
    const closeId = newId();
    await database.db.insert(closes).values({
      id: closeId,
      firmId,
      organizationId,
      periodStart: '2026-01-01',
      periodEnd: '2026-01-31',
      status: 'finished',
      openedByKind: 'session',
      openedById: 'u',
    });
    const files = EVIDENCE_FILES.map(({ name, contentType }) => {
      const content = Buffer.from(`${name} content`);
      return {
        closeId,
        organizationId,
        name,
        contentType,
        content,
        sha256: createHash('sha256').update(content).digest('hex'),
      };
    });
    await database.db.insert(closeEvidence).values(files);
    await appendAuditEvent(database.db, trail, {
      firmId,
      organizationId,
      actorKind: 'session',
      actorId: 'u',
      actorName: null,
      operation: 'closes.finish',
      entityType: 'Close',
      entityId: closeId,
      outcome: 'succeeded',
      statusCode: 200,
      errorCode: null,
      requestId: null,
      dryRun: false,
      syncTokenBefore: null,
      syncTokenAfter: null,
      evidenceSha256: manifestSha256(files),
    });
    expect((await cli('audit', 'verify', '--firm', firmId)).code).toBe(0);

    await database.db
      .update(closeEvidence)
      .set({ content: Buffer.from('forged') })
      .where(and(eq(closeEvidence.closeId, closeId), eq(closeEvidence.name, 'financial-packet.pdf')));
    const altered = await cli('audit', 'verify', '--firm', firmId);
    expect(altered.code).toBe(1);
    expect(altered.err).toContain(`the evidence of Close ${closeId} does not match the SHA-256 the event records`);
  });

  it('says it cannot check without the audit keys', async () => {
    const out: string[] = [];
    const code = await runCli(['audit', 'verify'], database, { out: (t) => out.push(t), err: (t) => out.push(t) });
    expect(code).toBe(1);
    expect(out.join('\n')).toBe('error: the audit keys are not configured (AUDIT_HMAC_KEYS)');
  });
});
