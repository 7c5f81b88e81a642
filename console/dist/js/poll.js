// Live updates: call a function again every few seconds while the page is
// shown and the function says there is more to see.

/**
 * poll runs step() every intervalMs while ctx is alive and the last step
 * returned true. A hidden tab waits until it is visible again; a failed
 * step is retried at the next interval. The returned kick() restarts a
 * stopped poll (after the user started something new).
 */
export function poll(ctx, step, intervalMs = 2000) {
  let timer = 0;
  let scheduled = false;
  const schedule = () => {
    if (!ctx.alive() || scheduled) return;
    scheduled = true;
    timer = setTimeout(() => { scheduled = false; tick(); }, intervalMs);
  };
  const tick = async () => {
    if (!ctx.alive()) return;
    if (document.hidden) {
      document.addEventListener('visibilitychange', tick, { once: true });
      return;
    }
    let again = true;
    try {
      again = await step();
    } catch (err) {
      if (err.name === 'AbortError') return;
      console.warn('live update failed; retrying', err);
    }
    if (again) schedule();
  };
  ctx.onCleanup(() => {
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', tick);
  });
  schedule();
  return { kick: schedule };
}
