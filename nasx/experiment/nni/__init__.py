"""Internal: NNI 3.0's experiment dialect at the edge of ``NasExperiment`` (:mod:`.config`)."""
