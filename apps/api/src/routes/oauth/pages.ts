import { SCOPES, type Scope } from '@firm/core';
import type { AuthorizationRequest, SessionUser } from '@firm/identity';
import { type Html, html } from '../../html';

/** Where a redirect URI sends the browser, as a person reads it: the host, or the app's scheme. */
export function redirectHost(uri: string): string {
  const url = new URL(uri);
  return url.host || url.protocol.replace(/:$/, '');
}

/** What a Content-Security-Policy form-action needs to let the consent form end at the app. */
export function redirectOrigin(uri: string): string {
  const url = new URL(uri);
  return url.origin !== 'null' ? url.origin : url.protocol;
}

export interface ConsentPageInput {
  request: AuthorizationRequest;
  user: SessionUser;
  firmName: string;
  organizations: { id: string; name: string }[];
  csrfToken: string;
  /** The OAuth parameters, carried through the form unchanged. */
  params: Record<string, string>;
}

export function consentPage(input: ConsentPageInput): Html {
  const { request, user } = input;
  const scopeItems = request.scopes.map((s: Scope) => html`<li>${SCOPES[s]} <span class="muted">(${s})</span></li>`);
  const hidden = Object.entries(input.params).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
  );
  const orgItems = input.organizations.map(
    (o) => html`<label><input type="checkbox" name="organization_ids" value="${o.id}" /> ${o.name}</label>`,
  );
  return html`<h1>Connect ${request.client.name}?</h1>
    <p>
      <strong>${request.client.name}</strong> asks to use the books of <strong>${input.firmName}</strong> on your
      behalf. You are signed in as ${user.email}.
    </p>
    <p>Whatever you decide, you will be sent back to <strong>${redirectHost(request.redirectUri)}</strong>.</p>
    <h2>It will be able to</h2>
    <ul class="scopes">
      ${scopeItems}
    </ul>
    <form method="post" action="/api/oauth/authorize">
      <input type="hidden" name="csrf_token" value="${input.csrfToken}" />
      ${hidden}
      <fieldset>
        <legend>Client companies it may use</legend>
        <label
          ><input type="radio" name="organizations" value="all" checked /> All client companies, including ones added
          later</label
        >
        <label><input type="radio" name="organizations" value="selected" /> Only the ones ticked below</label>
        ${orgItems}
      </fieldset>
      <button class="primary" type="submit" name="decision" value="approve">Allow</button>
      <button type="submit" name="decision" value="deny">Deny</button>
    </form>
    <p class="muted">You can disconnect it at any time (GET and DELETE /api/v1/oauth-connections).</p>`;
}

export function notAllowedPage(appName: string, user: SessionUser, denyUrl: string): Html {
  return html`<h1>You cannot connect apps</h1>
    <p class="error">
      Only owners and admins of the firm can connect apps such as ${appName}. You are signed in as ${user.email}, a
      ${user.role}.
    </p>
    <p>Ask an owner or admin of your firm to connect it, or <a href="${denyUrl}">go back to ${appName}</a>.</p>`;
}
