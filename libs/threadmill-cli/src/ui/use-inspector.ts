import type { TaskInspector } from '@threadmill/nestjs';
import { useEffect, useState, useSyncExternalStore } from 'react';
import { InspectorStore, type InspectorSnapshot } from './inspector-store.js';

/**
 * An {@link InspectorStore} for `inspector` and its latest snapshot. The
 * store polls once given a view (`store.setView`) and stops on unmount.
 */
export function useInspector(
  inspector: TaskInspector,
  intervalMs: number,
): { store: InspectorStore; snapshot: InspectorSnapshot } {
  const [store] = useState(() => new InspectorStore(inspector, intervalMs));
  useEffect(() => () => store.stop(), [store]);
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot);
  return { store, snapshot };
}
