import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

let rpcId = 0;
async function callTool(name: string, args: object) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      authorization: `Bearer ${t.demo.apiKey}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    },
    payload: { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().result as { isError?: boolean; content: { text: string }[]; structuredContent?: unknown };
}

describe('MCP tools take ids as ids, never as paths', () => {
  it.each([
    ['get_transaction', { entityType: 'invoice' }, 'transactionId'],
    [
      'delete_transaction',
      { body: { entityType: 'invoice', syncToken: '0' }, idempotencyKey: 'ids-1' },
      'transactionId',
    ],
    ['get_entity', { entity: 'Customer' }, 'id'],
  ])('%s refuses `..`, `.` and a slash in %s', async (tool, args, field) => {
    for (const id of ['..', '.', 'a/b', '../../clients']) {
      const answer = await callTool(tool, { clientId: t.orgId, ...args, [field]: id });
      expect(answer.isError, `${tool} ${id}: ${answer.content[0]?.text}`).toBe(true);
      const error = JSON.parse(answer.content[0]?.text ?? '{}').error;
      expect(error.code).toBe('VALIDATION_ERROR');
      expect(JSON.stringify(error.details)).toContain(field);
    }
  });

  it('still reads a record by its id', async () => {
    const created = await callTool('create_entity', {
      clientId: t.orgId,
      entity: 'Customer',
      body: { DisplayName: 'Id Check' },
      idempotencyKey: 'ids-create',
    });
    const id = (created.structuredContent as { data: { Id: string } }).data.Id;
    const read = await callTool('get_entity', { clientId: t.orgId, entity: 'Customer', id });
    expect(read.isError).toBeFalsy();
    expect((read.structuredContent as { data: { DisplayName: string } }).data.DisplayName).toBe('Id Check');
  });
});
