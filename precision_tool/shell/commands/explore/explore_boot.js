// explore: once Model Explorer has drawn both panes, hand it the NPU <-> TF mapping (its "upload mapping"
// sync mode, as if the user had uploaded mapping.json) and mark the page ready.
(function () {
  'use strict';
  const state = window.precisionExplore = {ready: false, info: null};
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  async function boot() {
    state.info = await (await fetch('/precision_tool/explore.json')).json();
    for (;;) {
      const renderers = window.me_test && window.me_test.renderers;
      if (renderers && renderers[0] && renderers[1] && renderers[0].curModelGraph && renderers[1].curModelGraph) break;
      await pause(50);
    }
    const sync = window.me_test.renderers[0].syncNavigationService;
    sync.updateSyncNavigationData('from_computer', state.info.mapping_entries);
    sync.mode.set('from_computer');
    // colour the NPU pane by the cosine (Model Explorer shows the node data loaded last)
    const renderer = window.me_test.renderers[0], ndp = renderer.nodeDataProviderExtensionService;
    const cosine = Object.values(ndp.runs()).find((run) => run.runName === state.info.colour_by);
    if (cosine) renderer.appService.setSelectedNodeDataProviderRunId(renderer.paneId, cosine.runId);
    state.ready = true;
    document.body.dataset.exploreReady = 'yes';
  }
  boot().catch((error) => console.error('explore: ' + error));
})();
