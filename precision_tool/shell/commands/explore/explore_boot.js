// explore: once Model Explorer has drawn both panes, hand it the NPU <-> TF mapping (its "upload mapping"
// sync mode, as if the user had uploaded mapping.json), colour the NPU pane by the cosine, add a box that
// finds an op by name at once, and mark the page ready.
(function () {
  'use strict';
  const state = window.precisionExplore = {ready: false, info: null, lastFind: null};
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // Model Explorer's own search tests a regular expression against every node's label, attributes and
  // input/output metadata and then redraws: at 20,000 ops it takes many seconds. This box looks the name
  // up in a list of the op names and asks Model Explorer to reveal and select that op.
  function addFindBox() {
    const renderers = window.me_test.renderers;
    const names = [0, 1].map((pane) => renderers[pane].curModelGraph.nodes
      .filter((node) => node.nodeType === 0).map((node) => node.id));
    const box = document.createElement('div');
    box.id = 'precision-find';
    box.style.cssText = 'position:fixed;left:50%;bottom:10px;transform:translateX(-50%);z-index:1000;' +
      'background:#fff;border:1px solid #bbb;border-radius:16px;padding:3px 10px;font:13px sans-serif;' +
      'box-shadow:0 1px 4px rgba(0,0,0,.2)';
    box.innerHTML = '<input type="search" size="40" placeholder="find an op by name (Enter)" ' +
      'aria-label="find an op by name" style="border:0;outline:0;font:inherit"> <span class="found"></span>';
    document.body.appendChild(box);
    const input = box.querySelector('input'), found = box.querySelector('.found');
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') found.textContent = find(input.value.trim());
    });

    function find(text) {
      const started = performance.now(), lower = text.toLowerCase();
      let pane = -1, id;
      for (const side of [0, 1]) {  // the exact name first, on the NPU side first
        if (id === undefined) { id = names[side].find((name) => name === text); pane = side; }
      }
      for (const side of [0, 1]) {
        if (id === undefined) { id = names[side].find((name) => name.toLowerCase().includes(lower)); pane = side; }
      }
      state.lastFind = {text: text, id: id || null, pane: id ? pane : -1, ms: performance.now() - started};
      if (!text || id === undefined) return text ? 'no op named ' + text : '';
      const renderer = renderers[pane];
      renderer.appService.curToLocateNodeInfo.set(
        {nodeId: id, rendererId: renderer.rendererId, isGroupNode: false, select: true});
      renderer.syncNavigationService.updateNavigationSource({paneIndex: pane, nodeId: id});
      return id + (pane === 0 ? ' (NPU graph)' : ' (TF graph)');
    }
    state.find = find;
  }

  async function boot() {
    state.info = await (await fetch('/precision_tool/explore.json')).json();
    for (;;) {
      const renderers = window.me_test && window.me_test.renderers;
      if (renderers && renderers[0] && renderers[1] && renderers[0].curModelGraph && renderers[1].curModelGraph) break;
      await pause(50);
    }
    const renderer = window.me_test.renderers[0];
    const sync = renderer.syncNavigationService;
    sync.updateSyncNavigationData('from_computer', state.info.mapping_entries);
    sync.mode.set('from_computer');
    // colour the NPU pane by the cosine (Model Explorer shows the node data loaded last)
    const ndp = renderer.nodeDataProviderExtensionService;
    const cosine = Object.values(ndp.runs()).find((run) => run.runName === state.info.colour_by);
    if (cosine) renderer.appService.setSelectedNodeDataProviderRunId(renderer.paneId, cosine.runId);
    addFindBox();
    state.ready = true;
    document.body.dataset.exploreReady = 'yes';
  }
  boot().catch((error) => console.error('explore: ' + error));
})();
