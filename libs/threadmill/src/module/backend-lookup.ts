import type { InjectionToken } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import type { RunEvents } from '../events/run-events.js';
import type { TaskInspector } from '../inspector/task-inspector.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { getRunEventsToken, getTaskInspectorToken } from './backend-tokens.js';

/**
 * Backend `backend`'s provider under `token`, wherever its `ThreadmillModule`
 * sits in the application: for the tools that take a backend's name as an
 * option (dashboard, metrics, health), which cannot know it when their own
 * providers are declared.
 * @param where the tool and its option, named in the error
 * @throws ThreadmillConfigError when no `ThreadmillModule` declares the backend
 */
function lookup<T>(moduleRef: ModuleRef, token: InjectionToken, backend: string, where: string): T {
  try {
    return moduleRef.get<unknown, T>(token, { strict: false });
  } catch {
    const module =
      backend === DEFAULT_BACKEND
        ? 'ThreadmillModule.forRoot()'
        : `ThreadmillModule.forRoot({ name: '${backend}', ... })`;
    throw new ThreadmillConfigError(
      [
        `backend: no ThreadmillModule of the application declares backend "${backend}"; import ${module} ` +
          '(global, the default) or name a backend the application declares',
      ],
      where,
    );
  }
}

/** Backend `backend`'s `TaskInspector`. @throws ThreadmillConfigError for an undeclared backend */
export function inspectorOf(moduleRef: ModuleRef, backend: string, where: string): TaskInspector {
  return lookup(moduleRef, getTaskInspectorToken(backend), backend, where);
}

/** Backend `backend`'s `RunEvents`. @throws ThreadmillConfigError for an undeclared backend */
export function runEventsOf(moduleRef: ModuleRef, backend: string, where: string): RunEvents {
  return lookup(moduleRef, getRunEventsToken(backend), backend, where);
}
