import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as schema from '@firm/db';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Every table is owned by one package: the one that writes it and answers the other packages' questions about it
 * through exported functions. A package's hand-written SQL names only its own tables. The owner of a table is the
 * owner of the schema file of `packages/db/src/schema` that defines it, unless the table is named in TABLE_OWNERS.
 */
const SCHEMA_OWNERS: Record<string, string> = {
  'accounts.ts': 'ledger',
  'balances.ts': 'ledger',
  'entries.ts': 'ledger',
  'events.ts': 'ledger',
  'organizations.ts': 'ledger',
  'scheduled.ts': 'ledger',
  'banking.ts': 'banking',
  'contacts.ts': 'documents',
  'documents.ts': 'documents',
  'items.ts': 'documents',
  'credentials.ts': 'identity',
  'firms.ts': 'identity',
  'oauth.ts': 'identity',
  'gateway.ts': 'gateway',
  'idempotency.ts': 'db',
  'imports.ts': 'imports',
  'qbo.ts': 'qbo',
  'webhooks.ts': 'webhooks',
};

/** Tables whose owner is not their schema file's. */
const TABLE_OWNERS: Record<string, string> = {
  // The versions behind the embedded platform's SyncTokens, counted by triggers and read only by that platform.
  record_versions: 'platform',
};

/**
 * Statements that name another package's table on purpose, each with its reason. Keep this short: a package that
 * needs another's rows calls the owner's function.
 */
const ALLOWED: { file: string; statement: string; tables: string[]; why: string }[] = [
  {
    file: 'packages/ledger/src/register-rows.ts',
    statement: 'insert into bank_transactions',
    tables: ['bank_transactions', 'bank_accounts'],
    why:
      'the posting statement writes the register rows of bank-linked accounts in its one prepared statement; the ' +
      'ledger cannot call banking, which depends on it (docs/ARCHITECTURE.md, "Ownership of tables")',
  },
  {
    file: 'packages/webhooks/src/worker.ts',
    statement: 'from outbox_events where processed_at is null order by',
    tables: ['outbox_events'],
    why: "the outbox is the ledger's hand-off to the delivery worker, which claims its events",
  },
  {
    file: 'packages/webhooks/src/worker.ts',
    statement: 'update outbox_events set processed_at',
    tables: ['outbox_events'],
    why: 'the delivery worker marks the events it fanned out',
  },
  {
    file: 'packages/webhooks/src/worker.ts',
    statement: 'from outbox_events where processed_at is null',
    tables: ['outbox_events'],
    why: 'the outbox lag metric is the delivery worker’s',
  },
];

const SCHEMA_DIR = 'packages/db/src/schema';

/** Each table the schema defines, with the schema file defining it. */
function schemaFiles(): Map<string, string> {
  const byTable = new Map<string, string>();
  for (const name of readdirSync(SCHEMA_DIR)) {
    if (!name.endsWith('.ts') || name === 'index.ts') continue;
    const text = readFileSync(join(SCHEMA_DIR, name), 'utf8');
    for (const m of text.matchAll(/pgTable\(\s*'([a-z_]+)'/g)) byTable.set(m[1] as string, name);
  }
  return byTable;
}

const tables = (Object.values(schema) as unknown[])
  .filter((v): v is PgTable => v instanceof PgTable)
  .map((t) => getTableConfig(t).name);

const fileOf = schemaFiles();

function ownerOf(table: string): string | undefined {
  if (TABLE_OWNERS[table]) return TABLE_OWNERS[table];
  const file = fileOf.get(table);
  return file === undefined ? undefined : SCHEMA_OWNERS[file];
}

/** Each outermost sql`...` template of the packages' sources (tests aside), with the tables it names. */
function statements(): { pkg: string; file: string; line: number; text: string; tables: string[] }[] {
  const known = new Set(tables);
  const found: { pkg: string; file: string; line: number; text: string; tables: string[] }[] = [];
  for (const pkg of readdirSync('packages')) {
    const dir = join('packages', pkg, 'src');
    let files: string[];
    try {
      files = readdirSync(dir, { recursive: true }) as string[];
    } catch {
      continue;
    }
    for (const name of files) {
      if (!name.endsWith('.ts') || name.endsWith('.d.ts') || /(^|\/)test|\.test\.ts$|testing/.test(name)) continue;
      const file = join(dir, name);
      if (file.startsWith(SCHEMA_DIR + '/')) continue; // the schema's own checks and indexes
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node, inside: boolean) => {
        const isSql = ts.isTaggedTemplateExpression(node) && node.tag.getText() === 'sql';
        if (isSql && !inside) {
          const text = node.template.getText().replace(/\s+/g, ' ');
          const named = [...text.matchAll(/\b(?:from|join|update|into|table)\s+([a-z_]+)/gi)]
            .map((m) => (m[1] as string).toLowerCase())
            .filter((t) => known.has(t));
          const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
          if (named.length > 0) found.push({ pkg, file, line, text, tables: [...new Set(named)] });
        }
        ts.forEachChild(node, (child) => visit(child, inside || isSql));
      };
      visit(source, false);
    }
  }
  return found;
}

describe('ownership of tables', () => {
  it('gives every table of the schema one owning package', () => {
    const packages = new Set(readdirSync('packages'));
    const unowned = tables.filter((t) => ownerOf(t) === undefined || !packages.has(ownerOf(t) as string));
    expect(unowned).toEqual([]);
    expect(tables.length).toBeGreaterThan(40);
    expect(ownerOf('journal_entries')).toBe('ledger');
    expect(ownerOf('documents')).toBe('documents');
    expect(ownerOf('bank_transactions')).toBe('banking');
    expect(basename(fileOf.get('bank_transactions') ?? '')).toBe('banking.ts');
  });

  it("finds no package's statement naming another package's table, but those listed with their reason", () => {
    const all = statements();
    expect(all.length).toBeGreaterThan(50); // the scan reads the sources it should
    const crossings = all.flatMap((s) =>
      s.tables.filter((t) => ownerOf(t) !== s.pkg).map((table) => ({ ...s, table })),
    );
    const unexplained = crossings
      .filter(
        (c) => !ALLOWED.some((a) => a.file === c.file && a.tables.includes(c.table) && c.text.includes(a.statement)),
      )
      .map((c) => `${c.file}:${c.line} ${c.table} (owned by ${ownerOf(c.table)})`);
    expect(unexplained).toEqual([]);
    // Every exception still matches a crossing: one removed or rewritten leaves no stale excuse behind.
    const stale = ALLOWED.flatMap((a) => a.tables.map((table) => ({ ...a, table })))
      .filter((a) => !crossings.some((c) => c.file === a.file && c.table === a.table && c.text.includes(a.statement)))
      .map((a) => `${a.file}: ${a.statement} (${a.table})`);
    expect(stale).toEqual([]);
  });
});
