import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as schema from '@firm/db';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * Every statement our packages write by hand that reads or changes a table holding tenants' rows names the tenant:
 * `organization_id` appears in it. A statement that reaches every organization on purpose (a background worker
 * claiming work, a verification walking every firm) is listed below with its reason; anything else found here is a
 * query one tenant could use to reach another's rows.
 */
const ACROSS_ORGANIZATIONS: { file: string; statement: string; why: string }[] = [
  {
    file: 'packages/banking/src/feeds/requests.ts',
    statement: 'update bank_feed_connections set sync_requested_at',
    why: "a verified aggregator webhook names the aggregator's item, whose ids the aggregator keeps unique",
  },
  {
    file: 'packages/ledger/src/scheduled-entries.ts',
    statement: 'from scheduled_entry_runs',
    why: 'the runs of a template whose organization was checked when it was read',
  },
  {
    file: 'packages/ledger/src/scheduled-entries.ts',
    statement: 'for update skip locked',
    why: 'the runner claims due templates of every organization',
  },
  {
    file: 'packages/gateway/src/proposals.ts',
    statement: 'for update skip locked',
    why: 'the expiry job claims due proposals of every organization, then expires each by its id and firm',
  },
  {
    file: 'packages/gateway/src/audit.ts',
    statement: 'select distinct firm_id from agent_audit_events',
    why: 'verification walks every firm’s chain',
  },
  {
    file: 'packages/webhooks/src/worker.ts',
    statement: 'update webhook_deliveries set status',
    why: 'the delivery worker records deliveries it claimed, by id',
  },
  {
    file: 'packages/db/src/idempotency.ts',
    statement: 'delete from idempotency_keys where expires_at <= now()',
    why: 'the purge removes expired idempotency records of every organization',
  },
  {
    file: 'packages/db/src/idempotency.ts',
    statement: 'where ${sameOf(k)}',
    why: 'a key’s records, named by sameOf: its firm and organization (a firm-level key: its firm)',
  },
  {
    file: 'packages/db/src/idempotency.ts',
    statement: 'where l.locked and ${same}',
    why: 'a key’s records, named by sameOf: its firm and organization (a firm-level key: its firm)',
  },
  {
    file: 'packages/webhooks/src/worker.ts',
    statement: 'from outbox_events where processed_at is null',
    why: 'the outbox lag metric is the whole service’s',
  },
  {
    file: 'packages/imports/src/post.ts',
    statement: "update imports i set status = 'running'",
    why: 'the import runner claims queued imports of every organization',
  },
  {
    file: 'packages/imports/src/post.ts',
    statement: "delete from imports where status = 'receiving'",
    why: 'the purge drops abandoned uploads of every organization',
  },
  {
    file: 'packages/qbo/src/tokens.ts',
    statement: 'from qbo_connections where access_token not like',
    why: 'resealing tokens under the current key reaches every connection',
  },
];

const ROOTS = ['packages', 'apps'];

const tenantTables = new Set(
  (Object.values(schema) as unknown[])
    .filter((v): v is PgTable => v instanceof PgTable)
    .map((t) => getTableConfig(t))
    .filter((c) => c.columns.some((col) => col.name === 'organization_id'))
    .map((c) => c.name),
);

/** Each outermost sql`...` template of the source files (tests and HTTP plugins aside), with the tables it names. */
function statements(): { file: string; line: number; text: string; tables: string[] }[] {
  const found: { file: string; line: number; text: string; tables: string[] }[] = [];
  for (const root of ROOTS) {
    for (const pkg of readdirSync(root)) {
      const dir = join(root, pkg, 'src');
      let files: string[];
      try {
        files = readdirSync(dir, { recursive: true }) as string[];
      } catch {
        continue;
      }
      for (const name of files) {
        if (!name.endsWith('.ts') || name.endsWith('.d.ts') || /(^|\/)test|\.test\.ts$|testing/.test(name)) continue;
        const file = join(dir, name);
        if (file.startsWith('apps/api/src/plugins/')) continue; // HTTP plumbing: keys and metrics of the service
        const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
        const visit = (node: ts.Node, inside: boolean) => {
          const isSql = ts.isTaggedTemplateExpression(node) && node.tag.getText() === 'sql';
          if (isSql && !inside) {
            const text = node.template.getText().replace(/\s+/g, ' ');
            const tables = [...text.matchAll(/\b(?:from|join|update|delete from)\s+([a-z_]+)/gi)]
              .map((m) => m[1] as string)
              .filter((t) => tenantTables.has(t));
            const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
            if (tables.length > 0) found.push({ file, line, text, tables });
          }
          ts.forEachChild(node, (child) => visit(child, inside || isSql));
        };
        visit(source, false);
      }
    }
  }
  return found;
}

describe('tenancy of hand-written SQL', () => {
  it('knows the tables that hold tenants’ rows', () => {
    for (const table of ['journal_entries', 'bank_transactions', 'reconciliations', 'documents']) {
      expect(tenantTables.has(table), table).toBe(true);
    }
  });

  it('finds no statement on a tenant table without organization_id, but those listed with their reason', () => {
    const all = statements();
    expect(all.length).toBeGreaterThan(50); // the scan reads the sources it should
    const unfiltered = all.filter((s) => !s.text.includes('organization_id'));
    const unexplained = unfiltered
      .filter((s) => !ACROSS_ORGANIZATIONS.some((a) => a.file === s.file && s.text.includes(a.statement)))
      .map((s) => `${s.file}:${s.line} (${s.tables.join(', ')})`);
    expect(unexplained).toEqual([]);
    // Every exception still matches a statement: one removed or rewritten leaves no stale excuse behind.
    const stale = ACROSS_ORGANIZATIONS.filter(
      (a) => !unfiltered.some((s) => s.file === a.file && s.text.includes(a.statement)),
    ).map((a) => `${a.file}: ${a.statement}`);
    expect(stale).toEqual([]);
  });
});
