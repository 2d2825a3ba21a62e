//! Wire enums for attribute fields that infiniband-diags prints by name.

crate::wire_enum! {
    /// NodeInfo.NodeType (ATTRIBUTES.md §2); names as libibmad's
    /// `mad_dump_node_type` prints them.
    pub struct NodeType(u8) {
        /// Channel adapter (HCA).
        CA = 1 => "Channel Adapter",
        /// Switch.
        SWITCH = 2 => "Switch",
        /// Router.
        ROUTER = 3 => "Router",
    }
}

crate::wire_enum! {
    /// PortInfo.PortState (4 bits; libibmad label `LinkState`), names as
    /// `mad_dump_portstate` prints them.
    pub struct PortState(u8) {
        /// No state change (Set) / unknown.
        NO_CHANGE = 0 => "NoChange",
        /// Down.
        DOWN = 1 => "Down",
        /// Initialize.
        INIT = 2 => "Initialize",
        /// Armed.
        ARMED = 3 => "Armed",
        /// Active.
        ACTIVE = 4 => "Active",
    }
}

crate::wire_enum! {
    /// PortInfo.PortPhysicalState (4 bits; libibmad label `PhysLinkState`),
    /// names as `mad_dump_physportstate` prints them.
    pub struct PhysPortState(u8) {
        /// No state change.
        NO_CHANGE = 0 => "NoChange",
        /// Sleep.
        SLEEP = 1 => "Sleep",
        /// Polling.
        POLLING = 2 => "Polling",
        /// Disabled.
        DISABLED = 3 => "Disabled",
        /// Port configuration training.
        PORT_CONFIGURATION_TRAINING = 4 => "PortConfigurationTraining",
        /// Link up.
        LINK_UP = 5 => "LinkUp",
        /// Link error recovery.
        LINK_ERROR_RECOVERY = 6 => "LinkErrorRecovery",
        /// Phy test.
        PHY_TEST = 7 => "PhyTest",
    }
}

crate::wire_enum! {
    /// SMInfo.SMState (4 bits; ATTRIBUTES.md §6).
    pub struct SmState(u8) {
        /// Not active.
        NOT_ACTIVE = 0 => "NotActive",
        /// Discovering.
        DISCOVERING = 1 => "Discovering",
        /// Standby.
        STANDBY = 2 => "Standby",
        /// Master.
        MASTER = 3 => "Master",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_names_match_the_libibmad_dumpers() {
        assert_eq!(NodeType::CA.to_string(), "Channel Adapter");
        assert_eq!(NodeType(2).to_string(), "Switch");
        assert_eq!(PortState(4).to_string(), "Active");
        assert_eq!(PortState(2).to_string(), "Initialize");
        assert_eq!(PhysPortState(4).to_string(), "PortConfigurationTraining");
        assert_eq!(PhysPortState(5).to_string(), "LinkUp");
        assert_eq!(SmState(3).to_string(), "Master");
        assert_eq!(PortState(9).name(), None);
    }
}
