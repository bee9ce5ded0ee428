import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { createContact, getContact, listContacts, presentContact, updateContact } from '@firm/documents';
import { errorResponses } from '../../errors/responses';
import { DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import {
  CompanyParams,
  ContactList,
  ContactListQuery,
  ContactOne,
  ContactParams,
  CreateContactBody,
  UpdateContactBody,
} from './schemas';

const tags = ['contacts'];

export const contactRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  for (const form of ['header', 'path'] as const) {
    app.get(
      form === 'header' ? '/contacts' : '/companies/:companyId/contacts',
      {
        config: { scope: 'contacts:read', organization: form },
        schema: {
          tags,
          summary: form === 'header' ? 'List customers and vendors' : 'Customers and vendors of a company',
          description: 'Ordered by name (case-insensitive).',
          ...(form === 'path' ? { params: CompanyParams } : {}),
          querystring: ContactListQuery,
          response: { 200: ContactList },
        },
      },
      async (request) => {
        const { limit, ...rest } = request.query;
        const page = await listContacts(db(), request.organization.id, { limit: limit ?? DEFAULT_LIMIT, ...rest });
        return { data: page.data.map(presentContact), nextCursor: page.nextCursor };
      },
    );
  }

  app.post(
    '/contacts',
    {
      config: { scope: 'contacts:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Create a customer or vendor',
        body: CreateContactBody,
        response: { 201: ContactOne, ...errorResponses(409, 415) },
      },
    },
    async (request, reply) => {
      const contact = await db().transaction((tx) =>
        createContact(tx, ledgerContext(request), request.organization.id, request.body),
      );
      return reply.code(201).send({ data: presentContact(contact) });
    },
  );

  app.get(
    '/contacts/:id',
    {
      config: { scope: 'contacts:read', organization: 'header' },
      schema: { tags, summary: 'A customer or vendor', params: ContactParams, response: { 200: ContactOne } },
    },
    async (request) => ({ data: presentContact(await getContact(db(), request.organization.id, request.params.id)) }),
  );

  app.patch(
    '/contacts/:id',
    {
      config: { scope: 'contacts:write', organization: 'header' },
      schema: {
        tags,
        summary: 'Update or archive a customer or vendor',
        description:
          'Send `archived: true` to archive. The kind cannot drop a side the contact has documents on ' +
          '(409 INVALID_STATE).',
        params: ContactParams,
        body: UpdateContactBody,
        response: { 200: ContactOne, ...errorResponses(409, 415) },
      },
    },
    async (request) => {
      const contact = await db().transaction((tx) =>
        updateContact(tx, ledgerContext(request), request.organization.id, request.params.id, request.body),
      );
      return { data: presentContact(contact) };
    },
  );
};
