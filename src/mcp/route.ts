/** Where `POST /mcp` joins the app: one call from src/app.ts. */
import type { Express } from 'express';
import type { ApiHandler } from '../http/api.js';
import { methodNotAllowed } from '../http/errors.js';
import { MCP_PATH } from './http.js';

export { MCP_PATH };

/** POST /mcp: label, JSON body, the MCP handler. Stateless, so GET (a server stream) and DELETE (a session) are 405. */
export function mountMcp(app: Express, handler: ApiHandler, label: ApiHandler, json: ApiHandler): void {
  app.post(MCP_PATH, label, json, handler);
  app.all(MCP_PATH, label, methodNotAllowed(['POST']));
}
