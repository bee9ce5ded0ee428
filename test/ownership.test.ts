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
  'closes.ts': 'close',
  'attachments.ts': 'attachments',
  'qbo.ts': 'qbo',
  'webhooks.ts': 'webhooks',
};

/** Tables whose owner is not their schema file's. */
const TABLE_OWNERS: Record<string, string> = {
  // The versions behind the embedded platform's SyncTokens, counted by triggers and read only by that platform.
  record_versions: 'platform',
};

/**
 * Statements (a sql template's text, or a query-builder chain's) that name another package's table on purpose, each
 * with its reason. Keep this short: a package that needs another's rows calls the owner's function. An app
 * (`apps/*`) owns no table, so every table it names would be listed here.
 */
const ALLOWED: { file: string; statement: string; tables: string[]; why: string }[] = [
  {
    file: 'packages/attachments/src/attachments.ts',
    statement: 'left join journal_entries e on e.organization_id = l.organization_id',
    tables: ['journal_entries', 'documents', 'bank_transactions', 'reconciliations'],
    why:
      'whether an attachment is evidence of posted history (which keeps its file and links) is one read of the ' +
      'state of every record it is linked to, in the transaction that holds the attachment locked; the ledger, ' +
      'documents and banking cannot depend on attachments, which depends on them',
  },
  {
    file: 'packages/attachments/src/attachments.ts',
    statement: "select id, 'document' as t, type::text as kind from documents",
    tables: ['documents', 'journal_entries', 'contacts'],
    why:
      "what each linked record is (a document's type, an entry's source, a contact's kind), so a link is named in " +
      "the platform's terms (`Invoice`, `Purchase`, `Vendor`): one read of the records the attachment is linked to, " +
      'as the posted-history check above; the owners cannot depend on attachments, which depends on them',
  },
  {
    file: 'packages/identity/src/api-keys.ts',
    statement: '.leftJoin( organizations, and(eq(organizations.id, sql.placeholder(',
    tables: ['organizations'],
    why:
      "every request's key lookup reads the organization it names (when it is of the key's firm) in the same " +
      'prepared statement as the key and its maker, so tenancy costs no round trip of its own; identity is the ' +
      'only reader of credentials and the ledger does not know them',
  },
  {
    file: 'packages/gateway/src/clients.ts',
    statement: '.innerJoin(organizations, eq(organizations.id, acctClients.organizationId))',
    tables: ['organizations'],
    why:
      "a client is the agents' view of a company: its name, archived state and firm are the organization's, read " +
      'with its access in one statement (the client hook runs it on every gateway request; a list orders by name)',
  },
  {
    file: 'packages/platform/src/embedded/company.ts',
    statement: '.leftJoin( recordVersions,',
    tables: ['organizations'],
    why:
      "CompanyInfo is the organization with its SyncToken, the platform's record_versions row, read in one " +
      'statement on the embedded read path rather than one round trip per table',
  },
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
    statement: 'update outbox_events o set processed_at',
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

/** The sources of a package or app, tests and test helpers aside. */
function sources(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir, { recursive: true }) as string[];
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.ts') && !n.endsWith('.d.ts') && !/(^|\/)test|\.test\.ts$|testing|fixtures\.ts$/.test(n))
    .map((n) => join(dir, n))
    .filter((file) => !file.startsWith(SCHEMA_DIR + '/')); // the schema's own checks and indexes
}

/** The schema's tables by export name: what an identifier imported from '@firm/db' may stand for. */
const tableOfExport = new Map(
  Object.entries(schema as Record<string, unknown>)
    .filter((e): e is [string, PgTable] => e[1] instanceof PgTable)
    .map(([name, table]) => [name, getTableConfig(table).name]),
);

/** The tables a file imports from '@firm/db', by local name; a namespace import maps to the whole schema. */
function importedTables(source: ts.SourceFile): { named: Map<string, string>; namespaces: Set<string> } {
  const named = new Map<string, string>();
  const namespaces = new Set<string>();
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || (statement.moduleSpecifier as ts.StringLiteral).text !== '@firm/db')
      continue;
    const bindings = statement.importClause?.namedBindings;
    if (bindings && ts.isNamespaceImport(bindings)) namespaces.add(bindings.name.text);
    for (const element of bindings && ts.isNamedImports(bindings) ? bindings.elements : []) {
      const table = tableOfExport.get((element.propertyName ?? element.name).text);
      if (table) named.set(element.name.text, table);
    }
  }
  return { named, namespaces };
}

/** The query builder's calls whose first argument is the table they read or write. */
const BUILDER_CALLS = new Set(['from', 'insert', 'update', 'delete', 'innerJoin', 'leftJoin', 'rightJoin', 'fullJoin']);

type Use = { kind: 'sql' | 'builder'; pkg: string; file: string; line: number; text: string; tables: string[] };

/**
 * Each statement of the packages' and apps' sources naming a table: an outermost sql`...` template (with the tables
 * its text names or it interpolates), or a query-builder chain (with the tables passed to its from, insert, update,
 * delete and joins). An app's `pkg` is `apps/<name>`, which owns no table.
 */
function statements(): Use[] {
  const known = new Set(tables);
  const found: Use[] = [];
  const roots = [
    ...readdirSync('packages').map((pkg) => ({ pkg, dir: join('packages', pkg, 'src') })),
    ...readdirSync('apps').map((app) => ({ pkg: `apps/${app}`, dir: join('apps', app, 'src') })),
  ];
  for (const { pkg, dir } of roots) {
    for (const file of sources(dir)) {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const imported = importedTables(source);
      const tableOf = (node: ts.Node | undefined): string | undefined => {
        if (node && ts.isIdentifier(node)) return imported.named.get(node.text);
        if (node && ts.isPropertyAccessExpression(node) && imported.namespaces.has(node.expression.getText()))
          return tableOfExport.get(node.name.text);
        return undefined;
      };
      const lineOf = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      const chains = new Map<ts.Node, Use>();
      const visit = (node: ts.Node, inside: boolean) => {
        const isSql = ts.isTaggedTemplateExpression(node) && node.tag.getText() === 'sql';
        if (isSql && !inside) {
          const text = node.template.getText().replace(/\s+/g, ' ');
          const named = [...text.matchAll(/\b(?:from|join|update|into|table)\s+([a-z_]+)/gi)]
            .map((m) => (m[1] as string).toLowerCase())
            .filter((t) => known.has(t));
          const spans = ts.isTemplateExpression(node.template) ? node.template.templateSpans : [];
          const interpolated = spans.map((span) => tableOf(span.expression)).filter((t) => t !== undefined);
          const all = [...new Set([...named, ...interpolated])];
          if (all.length > 0) found.push({ kind: 'sql', pkg, file, line: lineOf(node), text, tables: all });
        }
        const table =
          ts.isCallExpression(node) &&
          ts.isPropertyAccessExpression(node.expression) &&
          BUILDER_CALLS.has(node.expression.name.text)
            ? { name: node.expression.name, of: tableOf(node.arguments[0]) }
            : undefined;
        if (table?.of) {
          // One entry per chain (`tx.select().from(a).innerJoin(b, ...)`), named by its whole text.
          let chain: ts.Node = node;
          const outer = (n: ts.Node): boolean =>
            (ts.isPropertyAccessExpression(n.parent) || ts.isCallExpression(n.parent)) && n.parent.expression === n;
          while (outer(chain)) chain = chain.parent;
          const use = chains.get(chain);
          if (use) use.tables = [...new Set([...use.tables, table.of])];
          else {
            const text = chain.getText().replace(/\s+/g, ' ');
            const entry: Use = { kind: 'builder', pkg, file, line: lineOf(table.name), text, tables: [table.of] };
            chains.set(chain, entry);
            found.push(entry);
          }
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
    // The scan reads the sources it should, and sees both kinds of statement.
    expect(all.filter((s) => s.kind === 'sql').length).toBeGreaterThan(50);
    expect(all.filter((s) => s.kind === 'builder').length).toBeGreaterThan(50);
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
