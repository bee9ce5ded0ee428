import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { createItem, getItem, listItems, presentItem, updateItem } from '@firm/documents';
import { errorResponses } from '../../errors/responses';
import { CompanyParams, DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import { CreateItemBody, ItemList, ItemOne, ItemParams, NamedListQuery, UpdateItemBody } from './schemas';

const tags = ['items'];

export const itemRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  for (const form of ['header', 'path'] as const) {
    app.get(
      form === 'header' ? '/items' : '/companies/:companyId/items',
      {
        config: { scope: 'documents:read', organization: form },
        schema: {
          tags,
          summary: `List products and services${form === 'path' ? ' of a company' : ''}`,
          description: 'Ordered by name (case-insensitive).',
          ...(form === 'path' ? { params: CompanyParams } : {}),
          querystring: NamedListQuery,
          response: { 200: ItemList },
        },
      },
      async (request) => {
        const { limit, ...rest } = request.query;
        const page = await listItems(db(), request.organization.id, { limit: limit ?? DEFAULT_LIMIT, ...rest });
        return { data: page.data.map(presentItem), nextCursor: page.nextCursor };
      },
    );
  }

  app.post(
    '/items',
    {
      config: { scope: 'documents:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Create a product or service',
        body: CreateItemBody,
        response: { 201: ItemOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const item = await db().transaction((tx) =>
        createItem(tx, ledgerContext(request), request.organization.id, request.body),
      );
      return reply.code(201).send({ data: presentItem(item) });
    },
  );

  app.get(
    '/items/:id',
    {
      config: { scope: 'documents:read', organization: 'header' },
      schema: { tags, summary: 'A product or service', params: ItemParams, response: { 200: ItemOne } },
    },
    async (request) => ({ data: presentItem(await getItem(db(), request.organization.id, request.params.id)) }),
  );

  app.patch(
    '/items/:id',
    {
      config: { scope: 'documents:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Update or archive a product or service',
        description: 'Send `archived: true` to archive. Documents already written keep their lines.',
        params: ItemParams,
        body: UpdateItemBody,
        response: { 200: ItemOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request) => {
      const item = await db().transaction((tx) =>
        updateItem(tx, ledgerContext(request), request.organization.id, request.params.id, request.body),
      );
      return { data: presentItem(item) };
    },
  );
};
