"""QTCP and QTCP-AIMD (shared/specs/learning_cc.md section 3): TCP window moves learnt online
with Q-learning over generalisation-based Kanerva coding. See docs/qtcp.md.

from ccgym.qtcp import QTCP_AIMD, run_qtcp
run = run_qtcp("qtcp-aimd-dumbbell", QTCP_AIMD, overrides=["duration=100s"])
"""

from __future__ import annotations

from ccgym.qtcp.driver import (
    QTCP,
    QTCP_AIMD,
    QTCP_FEATURES,
    QTCP_MIMD,
    VARIANTS,
    LearnerMismatchWarning,
    QtcpConfig,
    QtcpRun,
    agent_table,
    load_learners,
    qtcp_scenario,
    run_qtcp,
    save_learners,
    saved_variant,
    utility_reward,
    with_learner,
)
from ccgym.qtcp.friendliness import (
    Friendliness,
    check_friendliness,
    friendliness,
    friendliness_scenario,
    friendliness_table,
)
from ccgym.qtcp.kanerva import KanervaConfig, KanervaQLearner, scale_state

__all__ = [
    "QTCP",
    "QTCP_AIMD",
    "QTCP_FEATURES",
    "QTCP_MIMD",
    "VARIANTS",
    "Friendliness",
    "KanervaConfig",
    "KanervaQLearner",
    "LearnerMismatchWarning",
    "QtcpConfig",
    "QtcpRun",
    "agent_table",
    "check_friendliness",
    "friendliness",
    "friendliness_scenario",
    "friendliness_table",
    "load_learners",
    "qtcp_scenario",
    "run_qtcp",
    "save_learners",
    "saved_variant",
    "scale_state",
    "utility_reward",
    "with_learner",
]
