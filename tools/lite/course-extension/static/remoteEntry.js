/*
 * The course's own JupyterLite plugin, written as a federated extension by hand: it needs no
 * build step and imports nothing (it uses only the `app` JupyterLab gives every plugin).
 *
 * - "Course > Back to this notebook's page": inside the course website (tools/build_site.py
 *   builds the app into <site>/lite/ and sets `streamingCourse.pages` in jupyter-lite.json),
 *   opens the page of the notebook on screen, in this tab.
 * - Each notebook JupyterLite opens starts a kernel of its own (a Python in this tab), and
 *   JupyterLite reopens the tabs of the last visit, each with its kernel. A launch link (an
 *   address naming a notebook: lab/index.html?path=...) opens that notebook alone: the
 *   layout of the last visit is not restored. When a kernel starts while others run, a
 *   notification names them and offers to shut them down; the same command is in the
 *   Course menu.
 */
(function () {
  'use strict';
  const BACK = 'streaming-course:back-to-page';
  const STOP_OTHERS = 'streaming-course:shut-down-other-kernels';
  // The app's root: this file is <app>/extensions/streaming-course/static/remoteEntry.js.
  const APP_ROOT = document.currentScript.src.split('/extensions/')[0] + '/';

  function courseConfig() {
    const element = document.getElementById('jupyter-config-data');
    const data = element ? JSON.parse(element.textContent || '{}') : {};
    return data.streamingCourse || {};
  }

  /**
   * The website's page of a notebook (notebooks/01_x.ipynb -> <pages>notebooks/01_x.html); the
   * front page for anything else (a notebook the learner made has no page).
   */
  function pageOf(pagesRoot, path) {
    const lesson = /^(notebooks|exercises)\/[^/]+\.ipynb$/.test(path || '');
    return new URL(lesson ? path.replace(/\.ipynb$/, '.html') : 'index.html', pagesRoot).href;
  }

  function notebookName(path) {
    return path.split('/').pop();
  }

  const plugin = {
    id: 'streaming-course:plugin',
    description: 'The way back to the course website; a word when other notebooks hold a kernel.',
    autoStart: true,
    activate: async (app) => {
      const { commands, shell, serviceManager } = app;
      // Before the layout is restored (the app waits for its plugins to activate first).
      const launched = new URLSearchParams(window.location.search);
      if (launched.has('path')) {
        const name = launched.get('workspace') || 'default';
        try {
          await serviceManager.workspaces.save(name, { data: {}, metadata: { id: name } });
        } catch (error) {
          console.warn('streaming-course: the last layout is restored as it was', error);
        }
      }
      const pages = courseConfig().pages;
      const pagesRoot = pages ? new URL(pages, APP_ROOT).href : null;
      const currentPath = () => {
        const widget = shell.currentWidget;
        return widget && widget.context ? widget.context.path : null;
      };
      const currentSession = () => {
        const widget = shell.currentWidget;
        const context = widget && widget.sessionContext;
        return context && context.session ? context.session.id : null;
      };
      // The sessions with a kernel other than `keep`, a session id (JupyterLite starts a
      // session under a temporary path and gives it its notebook's path afterwards).
      const othersRunning = (keep) =>
        Array.from(serviceManager.sessions.running()).filter(
          (session) => session.id !== keep && session.kernel
        );

      commands.addCommand(BACK, {
        label: "Back to this notebook's page",
        caption: 'Open the course website at the page of the notebook on screen, in this tab',
        isVisible: () => Boolean(pagesRoot),
        execute: () => {
          window.location.assign(pageOf(pagesRoot, currentPath()));
        }
      });

      commands.addCommand(STOP_OTHERS, {
        label: 'Shut down the kernels of the other notebooks',
        caption: 'Keep only the kernel of the notebook on screen (or of the session args.keep)',
        isEnabled: (args) => othersRunning(args.keep || currentSession()).length > 0,
        execute: async (args) => {
          const keep = args.keep || currentSession();
          for (const session of othersRunning(keep)) {
            await serviceManager.sessions.shutdown(session.id);
          }
        }
      });

      // Tell the learner once per kernel that starts while others run.
      const seen = new Set();
      serviceManager.sessions.runningChanged.connect((_, sessions) => {
        const fresh = sessions.filter((session) => !seen.has(session.id));
        sessions.forEach((session) => seen.add(session.id));
        for (const session of fresh) {
          const others = othersRunning(session.id);
          if (!others.length) {
            continue;
          }
          const names = others.map((other) => notebookName(other.path)).join(', ');
          const count = others.length === 1 ? 'Another notebook' : `${others.length} other notebooks`;
          void commands.execute('apputils:notify', {
            message:
              `${count} still ${others.length === 1 ? 'runs its' : 'run their'} own kernel in this tab ` +
              `(${names}): each holds its own Python and memory.`,
            type: 'info',
            options: {
              autoClose: false,
              actions: [
                {
                  label: 'Shut them down',
                  caption: 'Keep only the kernel of the notebook that just started',
                  commandId: STOP_OTHERS,
                  args: { keep: session.id }
                }
              ]
            }
          });
        }
      });
    }
  };

  const container = {
    init: () => Promise.resolve(),
    get: (module) => {
      if (module !== './extension') {
        return Promise.reject(new Error(`streaming-course has no module ${module}`));
      }
      return Promise.resolve(() => ({ __esModule: true, default: [plugin] }));
    }
  };
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB['streaming-course'] = container;
})();
