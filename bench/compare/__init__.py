"""ReMe's own stores side by side with the drop-in: the backends bench, its report, the world and app runs."""
