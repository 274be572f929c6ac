"""The rendering core every task's view is drawn with; it imports no task.

- :mod:`.render`: offscreen rendering to PNG with no display and no GPU; :mod:`.backends`: the
  renderers it falls back through (a stuck one is given up in seconds), :mod:`._worker`: the
  render worker process, :mod:`.software`: the numpy splatter that always works.
- :mod:`.geometry`: checked Open3D point clouds (every scene's drawable); :mod:`.colors`: fixed
  class / part palettes, scalar colour maps and their legends.
- :mod:`.figure_compose`: panels joined under their titles; :mod:`.panel_titles`: what each
  ``--png`` panel shows, read off a viewer state.
- :mod:`.window`: the Open3D window any task's state is shown in.
- :mod:`.loading`: a checkpoint restored for the tasks a caller shows, a sample as model inputs.
"""
